import CDeviceIDTPM
import CDeviceIDLibc

/// One conversation with the TPM (`dids_tpm_*`, the TPM room CDeviceIDTPM): opened, used, closed,
/// within a deadline. Every failure becomes a status with words saying what to do:
///
/// - no TPM (no `/dev/tpmrm0`, a software TPM not listening): `.unavailable`;
/// - `/dev/tpmrm0` not accessible to this user: `.permission`, naming the `tss` group;
/// - a hierarchy with a password DeviceID does not know: `.permission`;
/// - dictionary-attack lockout: `.locked`; failure mode: `.unavailable`;
/// - no answer before the deadline: `.timedOut`, never a hang.
enum TPMConversation {
    /// Runs `body` on a fresh conversation with the TPM at `address`, ending by `milliseconds`.
    static func run<T>(_ address: TPMAddress, milliseconds: UInt32,
                       _ body: (OpaquePointer, inout dids_tpm_failure) -> T?) throws(DeviceIDError) -> T {
        do { try OnDemandLibrary.tpm.require() } catch { throw error.about(.tpm) }
        var failure = dids_tpm_failure()
        let deadline = UInt64(Monotonic.milliseconds()) + UInt64(milliseconds)
        guard let tpm = dids_tpm_open(address.driver, address.configuration, deadline, &failure) else {
            throw error(failure, address, milliseconds)
        }
        defer { dids_tpm_close(tpm) }
        guard start(tpm, address, &failure), let result = body(tpm, &failure) else {
            throw error(failure, address, milliseconds)
        }
        pinFirstUse(tpm, address)
        return result
    }

    /// The pin given to the conversation (docs/STATE.md, "TPM pins"), then TPM2_Startup: the first
    /// command under the deadline like the rest (issue 34: a swtpm busy with another client's
    /// connection held the caller in TPM2_Startup for as long as that lasted). Out of `run`, which
    /// is specialized for every caller.
    @inline(never)
    private static func start(_ tpm: OpaquePointer, _ address: TPMAddress, _ failure: inout dids_tpm_failure) -> Bool {
        address.pin?.name?.withUnsafeBufferPointer { dids_tpm_pin(tpm, $0.baseAddress, $0.count) }
        return dids_tpm_startup(tpm, &failure) == 0
    }

    /// At first use, the salting key is pinned once a conversation under it succeeded.
    @inline(never)
    private static func pinFirstUse(_ tpm: OpaquePointer, _ address: TPMAddress) {
        guard let pin = address.pin, pin.name == nil else { return }
        var name = [UInt8](repeating: 0, count: 68)
        let size = dids_tpm_salt_name(tpm, &name)
        if size > 0 { pin.keep(Array(name[0..<size])) }
    }

    /// What TPM2_Certify gave: the TPMS_ATTEST as signed, the marshalled TPMT_SIGNATURE, the
    /// certified key's and the AK's marshalled TPMT_PUBLIC, and the certified key's Name as the
    /// TPM gave it (which the TPMS_ATTEST certifies: the one Name an ID is computed from).
    struct Certified {
        let attest: [UInt8]
        let signature: [UInt8]
        let certifiedPublic: [UInt8]
        let certifiedName: [UInt8]
        let akPublic: [UInt8]
    }

    /// TPM2_Certify of the `kind` key of `unique` by the AK of `ak` over `qualifying`, in the
    /// conversation `tpm`; nil with `failure` set.
    static func certify(_ tpm: OpaquePointer, _ failure: inout dids_tpm_failure, ak: [UInt8], _ kind: dids_tpm_key,
                        _ unique: [UInt8], over qualifying: [UInt8]) -> Certified? {
        var signature = [UInt8](), certifiedPublic = [UInt8](), certifiedName = [UInt8](), akPublic = [UInt8]()
        let (ok, attest) = withBuffer(capacity: 1024) { attest in
            let (ok, s) = withBuffer(capacity: 512) { s in
                let (ok, key) = withBuffer(capacity: 512) { key in
                    let (ok, name) = withBuffer(capacity: 68) { name in
                        let (ok, signer) = withBuffer(capacity: 512) { signer in
                            ak.withUnsafeBufferPointer { a in
                                unique.withUnsafeBufferPointer { u in
                                    qualifying.withUnsafeBufferPointer { q in
                                        dids_tpm_certify(tpm, a.baseAddress, kind, u.baseAddress, q.baseAddress, q.count,
                                                         &attest, &s, &key, &name, &signer, &failure)
                                    }
                                }
                            }
                        }
                        akPublic = signer
                        return ok
                    }
                    certifiedName = name
                    return ok
                }
                certifiedPublic = key
                return ok
            }
            signature = s
            return ok
        }
        return ok != 0 ? Certified(attest: attest, signature: signature, certifiedPublic: certifiedPublic,
                                   certifiedName: certifiedName, akPublic: akPublic) : nil
    }

    /// A byte buffer for a `dids_tpm_bytes` output.
    static func withBuffer<T>(capacity: Int, _ body: (inout dids_tpm_bytes) -> T) -> (T, [UInt8]) {
        var storage = [UInt8](repeating: 0, count: capacity)
        return storage.withUnsafeMutableBufferPointer { buffer in
            var bytes = dids_tpm_bytes(data: buffer.baseAddress, capacity: capacity, size: 0)
            let result = body(&bytes)
            return (result, Array(buffer[0..<min(bytes.size, capacity)]))
        }
    }

    static func hex(_ rc: UInt32) -> String {
        let digits = Hex.encode([UInt8(rc >> 24), UInt8(rc >> 16 & 0xff), UInt8(rc >> 8 & 0xff), UInt8(rc & 0xff)])
        return "0x" + digits
    }

    private static func stageName(_ stage: Int32) -> String {
        switch stage {
        case Int32(DIDS_TPM_STAGE_STARTUP.rawValue): "TPM2_Startup"
        case Int32(DIDS_TPM_STAGE_CREATE.rawValue): "TPM2_CreatePrimary"
        case Int32(DIDS_TPM_STAGE_NAME.rawValue): "reading the key's Name"
        case Int32(DIDS_TPM_STAGE_EK_CERTIFICATE.rawValue): "reading the EK certificates' NV indices"
        case Int32(DIDS_TPM_STAGE_SESSION.rawValue): "the EK's policy session"
        case Int32(DIDS_TPM_STAGE_PROPERTIES.rawValue): "reading the TPM's properties"
        case Int32(DIDS_TPM_STAGE_ACTIVATE.rawValue): "TPM2_ActivateCredential"
        case Int32(DIDS_TPM_STAGE_CERTIFY.rawValue): "TPM2_Certify"
        case Int32(DIDS_TPM_STAGE_COUNTER.rawValue): "the app's NV counter"
        case Int32(DIDS_TPM_STAGE_SIGN.rawValue): "TPM2_Sign"
        case Int32(DIDS_TPM_STAGE_PLATFORM_AK.rawValue): "the platform AK"
        case Int32(DIDS_TPM_STAGE_EK_TEMPLATE.rawValue): "reading the EK template in NV"
        case Int32(DIDS_TPM_STAGE_ESYS.rawValue): "Esys_Initialize"
        case Int32(DIDS_TPM_STAGE_BINDING.rawValue): "the this-device-only binding"
        default: "the conversation"
        }
    }

    /// The status and words for a failed conversation, worded as the TPM's (`DeviceIDError.Subject`).
    static func error(_ failure: dids_tpm_failure, _ address: TPMAddress, _ milliseconds: UInt32) -> DeviceIDError {
        classified(failure, address, milliseconds).about(.tpm)
    }

    private static func classified(_ failure: dids_tpm_failure, _ address: TPMAddress,
                                   _ milliseconds: UInt32) -> DeviceIDError {
        let stage = failure.stage, rc = failure.rc, errorNumber = failure.error_number
        let at = address.description
        switch stage {
        case Int32(DIDS_TPM_STAGE_TCTI_LOAD.rawValue):
            return DeviceIDError(.unsupported, "no TCTI for \(at): only device: and swtpm: are")
        case Int32(DIDS_TPM_STAGE_TCTI_INIT.rawValue):
            switch errorNumber {
            case EACCES, EPERM:
                return DeviceIDError(.permission,
                                     "cannot open \(address.configuration): \(String(cString: strerror(errorNumber))); the TPM resource "
                                         + "manager is root:tss 0660 on Debian: add the user to the tss group "
                                         + "(usermod -aG tss USER, then log in again)")
            case let e where (e == ENOENT || e == ENODEV || e == ENXIO) && address.driver == "device":
                if case .flatpak(let app)? = Surroundings.current().sandbox {
                    return DeviceIDError(.unavailable,
                                         "no TPM in this Flatpak sandbox (" + app + "): " + address.configuration
                                             + " is not in it; an app sees it only with --device=all, and then only "
                                             + "where its user may open it")
                }
                if case .snap(let name)? = Surroundings.current().sandbox {
                    return DeviceIDError(.unavailable,
                                         "no TPM in this snap (" + name + "): " + address.configuration
                                             + " is not in it; a snap reaches it only through the tpm interface")
                }
                return DeviceIDError(.unavailable,
                                     "no TPM: \(address.configuration) does not exist (a machine or VM without a TPM 2.0, "
                                         + "or without its kernel driver)")
            case ENOENT, ENODEV, ENXIO:
                return DeviceIDError(.unavailable, "cannot reach the TPM at \(at): \(String(cString: strerror(errorNumber)))")
            case ENOMEM: return DeviceIDError(.noMemory, "out of memory opening the TPM at \(at)")
            case EMFILE, ENFILE: return DeviceIDError(.noMemory, "no file descriptor left to open the TPM at \(at)")
            case 0: return DeviceIDError(.unavailable, "cannot reach the TPM at \(at) (TSS2 \(hex(rc)))")
            default: return DeviceIDError(.unavailable, "cannot reach the TPM at \(at): \(String(cString: strerror(errorNumber)))")
            }
        case Int32(DIDS_TPM_STAGE_TIMED_OUT.rawValue):
            let code = dids_tpm_rc_code(rc)
            if code == DIDS_TPM2_RC_RETRY || code == DIDS_TPM2_RC_YIELDED || code == DIDS_TPM2_RC_TESTING {
                return DeviceIDError(.timedOut, "the TPM at \(at) did not answer within \(milliseconds) ms: it asked for "
                                         + "the command to be sent again until then (TSS2 \(hex(rc)))")
            }
            return DeviceIDError(.timedOut, "the TPM at \(at) did not answer within \(milliseconds) ms")
        case Int32(DIDS_TPM_STAGE_SHAPE.rawValue):
            return DeviceIDError(.io, "the TPM at \(at) answered with a structure of another shape than asked for")
        case Int32(DIDS_TPM_STAGE_PLATFORM_AK.rawValue) where errorNumber == EBADMSG:
            return DeviceIDError(.unsupported, "the TPM at \(at) keeps a platform AK template in NV that is not a "
                                     + "TPMT_PUBLIC tpm2-tss can read")
        case Int32(DIDS_TPM_STAGE_EK_TEMPLATE.rawValue) where errorNumber == EBADMSG || errorNumber == EPROTONOSUPPORT:
            // The template changed since the enrolment offered that EK (EndorsementSurvey checks it).
            return DeviceIDError(.unsupported, "the TPM at \(at) makes the EK from a template in NV that "
                                     + EndorsementSurvey.unfitWords)
        case Int32(DIDS_TPM_STAGE_DEVICE_KIND.rawValue):
            return DeviceIDError(.invalidArgument, TPMDeviceKind.words(rc, address.configuration))
        case Int32(DIDS_TPM_STAGE_BINDING.rawValue) where errorNumber == EOPNOTSUPP:
            return DeviceIDError(.unsupported, "the TPM at \(at) has no SHA-256 bank of PCRs allocated, so nothing can be "
                                     + "bound to PCR 7 (the Secure Boot state) here: use this-device-only")
        case Int32(DIDS_TPM_STAGE_COUNTER.rawValue) where errorNumber == EBUSY:
            return DeviceIDError(.timedOut, "the TPM at \(at) had this app's counter incremented by other processes "
                                     + "between each of DeviceID's reads of it, too many times: retry")
        case Int32(DIDS_TPM_STAGE_COUNTER.rawValue)
            where dids_tpm_rc_code(rc) == DIDS_TPM2_RC_AUTH_FAIL || dids_tpm_rc_code(rc) == DIDS_TPM2_RC_BAD_AUTH:
            // on an index whose tag is the app's: not DeviceID's, or (the salted session's HMAC) a command changed
            return DeviceIDError(.permission, "the TPM at \(at) refused this app's NV counter: an index with its tag "
                                     + "but a password DeviceID does not know was defined by another program "
                                     + "(tpm2_nvreadpublic lists it; tpm2_nvundefine with owner authorisation removes it), "
                                     + "or something between DeviceID and the TPM changed the command")
        case Int32(DIDS_TPM_STAGE_PIN.rawValue):
            return DeviceIDError(.io, "the TPM at \(at) answered with another salting key (the storage key its sessions "
                                     + "are salted to) than the one pinned on this machine at first use: the TPM was "
                                     + "cleared (tpm2_clear) or replaced, or something between DeviceID and the TPM "
                                     + "answers as it; once you know it is the TPM, deviceid tpm-pin forget has the next "
                                     + "call pin the one that answers then")
        case Int32(DIDS_TPM_STAGE_COUNTER.rawValue) where errorNumber == ENOSPC:
            return DeviceIDError(.unavailable, "the TPM at \(at) has another program's NV index in every slot of this app's "
                                     + "counter (tpm2_nvreadpublic lists them)")
        default: break
        }
        if errorNumber == EPROTO {
            return DeviceIDError(.io, "the TPM at \(at) answered \(stageName(stage)) with something other than was asked "
                                     + "for (a key of another template, another NV index or capability, another "
                                     + "certification): a TPM, or something between DeviceID and it, that changes answers")
        }
        if errorNumber == ENOBUFS { return DeviceIDError(.tooLarge, "the TPM's answer to \(stageName(stage)) is too large") }
        if errorNumber == EINVAL { return DeviceIDError(.invalidArgument, "an argument of \(stageName(stage)) is too large for the TPM") }
        let what = stageName(stage)
        let layer = rc & 0xff_0000
        let code = dids_tpm_rc_code(rc)
        // A parameter the TPM cannot use (format 1): the blob or secret is damaged, or was made for
        // another TPM's EK or another attestation key. swtpm 0.7 (libtpms 0.9) answers a secret
        // sealed to another EK with TPM_RC_FAILURE and goes on working: from ActivateCredential
        // that is the challenge's fault too, not failure mode (which the next call would show).
        if stage == Int32(DIDS_TPM_STAGE_ACTIVATE.rawValue), layer == 0, rc & 0x80 != 0 || code == DIDS_TPM2_RC_FAILURE {
            return DeviceIDError(.invalidArgument,
                                 "the TPM cannot open this challenge: it was not made for this TPM's EK and attestation "
                                     + "key, or it was damaged (TSS2 \(hex(rc)))")
        }
        switch code {
        case DIDS_TPM2_RC_FAILURE:
            return DeviceIDError(.unavailable,
                                 "the TPM at \(at) is in failure mode (\(what), TSS2 \(hex(rc))); it needs a reset or firmware update")
        case DIDS_TPM2_RC_LOCKOUT:
            return DeviceIDError(.locked, "the TPM at \(at) is in dictionary-attack lockout (\(what))")
        case DIDS_TPM2_RC_AUTH_FAIL, DIDS_TPM2_RC_BAD_AUTH:
            return DeviceIDError(.permission,
                                 "the TPM refused \(what): a hierarchy has a password (DeviceID uses the empty owner "
                                     + "and endorsement authorisation)")
        case DIDS_TPM2_RC_HANDLE:
            if stage == Int32(DIDS_TPM_STAGE_EK_CERTIFICATE.rawValue) {
                return DeviceIDError(.notFound, "the TPM at \(at) removed an EK certificate's NV index while it was read")
            }
        case DIDS_TPM2_RC_OBJECT_MEMORY:
            return DeviceIDError(.unavailable, "the TPM at \(at) has no free object slot (\(what))")
        case DIDS_TPM2_RC_NV_SPACE:
            return DeviceIDError(.noMemory, "the TPM at \(at) has no room left for \(what): its NV memory or its NV counters "
                                     + "(tpm2_getcap properties-variable: TPM2_PT_NV_COUNTERS_AVAIL) are used up "
                                     + "(tpm2_nvreadpublic lists the indices; tpm2_nvundefine frees one)")
        case DIDS_TPM2_RC_NV_RATE:
            return DeviceIDError(.unavailable, "the TPM at \(at) is limiting the rate of NV writes (\(what)): retry in a moment")
        case DIDS_TPM2_RC_NV_UNAVAILABLE:
            return DeviceIDError(.unavailable, "the TPM at \(at) cannot reach its NV memory now (\(what))")
        default: break
        }
        if layer == 0x0a_0000 {  // the TCTI: the connection broke
            return DeviceIDError(.unavailable, "the connection to the TPM at \(at) failed during \(what) (TSS2 \(hex(rc)))")
        }
        return DeviceIDError(.io, "the TPM at \(at) refused \(what) (TSS2 \(hex(rc)))")
    }
}
