import CDeviceIDTPM

/// A platform attestation key (docs/HARDWARE-ID.md, "Platform attestation keys"): the AK a cloud's
/// virtual TPM keeps, persistent (Azure) or made from a template in NV (GCE), with a certificate in
/// NV from the cloud's vTPM CA. Where the TPM
/// holds no EK certificate, it certifies the app's AK (TPM2_Certify) for a Privacy CA that trusts
/// the cloud's root: the enrolment's `platform-ak` route.
struct PlatformAK {
    let raw: dids_tpm_platform_ak

    static let all: [PlatformAK] = (0..<Int(DIDS_TPM_PLATFORM_AKS.rawValue)).map {
        PlatformAK(raw: dids_tpm_platform_ak(rawValue: UInt32($0)))
    }

    /// Its name on the wire ("azure", "gce-rsa", "gce-ecc").
    var name: String {
        switch raw {
        case DIDS_TPM_PLATFORM_AK_AZURE: "azure"
        case DIDS_TPM_PLATFORM_AK_GCE_RSA: "gce-rsa"
        case DIDS_TPM_PLATFORM_AK_GCE_ECC: "gce-ecc"
        default: "unknown"
        }
    }

    /// The persistent handle (0 for a key made from its template), the NV indices of the
    /// certificate and of the template (0 for a persistent key).
    var handle: UInt32 { dids_tpm_platform_ak_handle(raw) }
    var certificateIndex: UInt32 { dids_tpm_platform_ak_certificate_index(raw) }
    var templateIndex: UInt32 { dids_tpm_platform_ak_template_index(raw) }

    init(raw: dids_tpm_platform_ak) { self.raw = raw }

    init?(named name: String) {
        guard let ak = Self.all.first(where: { $0.name == name }) else { return nil }
        self = ak
    }

    /// "azure (AK 0x81000003, certificate in NV index 0x01c101d0)", "gce-rsa (AK made from the
    /// template in NV index 0x01c10001, certificate in NV index 0x01c10000)".
    var described: String {
        let key = handle != 0
            ? TPMConversation.hex(handle) : "made from the template in NV index \(TPMConversation.hex(templateIndex))"
        return "\(name) (AK \(key), certificate in NV index \(TPMConversation.hex(certificateIndex)))"
    }

    /// The first platform AK the TPM holds with its certificate, and that certificate as its NV
    /// index holds it (TPMAttestation.derCertificate finds its DER), into
    /// `found` (nil when it holds none); false with `failure` set when the TPM failed.
    static func find(_ tpm: OpaquePointer, _ failure: inout dids_tpm_failure, into found: inout (PlatformAK, [UInt8])?)
        -> Bool {
        found = nil
        for ak in all {
            let (ok, stored) = TPMConversation.withBuffer(capacity: 4096) {
                dids_tpm_platform_ak_certificate(tpm, ak.raw, &$0, &failure)
            }
            guard ok != 0 else { return false }
            if !stored.isEmpty {
                found = (ak, stored)
                return true
            }
        }
        return true
    }

    /// The enrolment response to a `platform-ak` challenge (`platform_ak`, `nonce`): TPM2_Certify
    /// of `appID`'s AK by this platform AK over the nonce, with the platform AK's certificate again
    /// (the CA checks it is the one the request named).
    func response(to challenge: FlatJSON, id: String, appID: String, address: TPMAddress,
                  milliseconds: UInt32) throws(DeviceIDError) -> String {
        let nonce = try TPMAttestation.bytes(challenge, "nonce")
        guard TPMAttestation.nonceSizes.contains(nonce.count) else {
            throw DeviceIDError(.invalidArgument, TPMAttestation.nonceWords("the challenge's nonce"))
        }
        let unique = HardwareIdentity.attestationKeyUnique(appID: appID)
        let raw = self.raw
        let (attest, signature, certificate): ([UInt8], [UInt8], [UInt8]) =
            try TPMConversation.run(address, milliseconds: milliseconds) { tpm, failure in
                let (found, stored) = TPMConversation.withBuffer(capacity: 4096) {
                    dids_tpm_platform_ak_certificate(tpm, raw, &$0, &failure)
                }
                guard found != 0 else { return nil }
                guard !stored.isEmpty else { return ([], [], []) }
                var signature = [UInt8]()
                let (ok, attest) = TPMConversation.withBuffer(capacity: 1024) { attest in
                    let (ok, s) = TPMConversation.withBuffer(capacity: 1024) { s in
                        unique.withUnsafeBufferPointer { u in
                            nonce.withUnsafeBufferPointer { n in
                                dids_tpm_platform_certify(tpm, raw, u.baseAddress, n.baseAddress, n.count, &attest, &s,
                                                          &failure)
                            }
                        }
                    }
                    signature = s
                    return ok
                }
                return ok != 0 ? (attest, signature, stored) : nil
            }
        guard !certificate.isEmpty else {
            throw DeviceIDError(.notFound, "the TPM at \(address) no longer holds platform AK \(described), which the "
                                    + "challenge is for: enrol again").about(.tpm)
        }
        let der = try TPMAttestation.derCertificate(certificate, index: certificateIndex, address: address)
        var response = TPMAttestation.message(.enrolmentResponse)
        response.set("id", id)
        response.set("certify_attest", Base64.encode(attest))
        response.set("certify_signature", Base64.encode(signature))
        response.set("platform_ak_certificate", Base64.encode(der))
        return response.text
    }
}
