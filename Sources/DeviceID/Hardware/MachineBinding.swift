import CDeviceIDTPM

/// The TPM half of this-device-only (docs/STATE.md, "Protection classes"; docs/HARDWARE-ID.md,
/// "This-device-only binding"): a 32-byte secret only this TPM can compute again. Wrapping asks
/// the TPM for an ephemeral ECDH key pair against its binding key (a primary of the owner
/// hierarchy, one fixed template); unwrapping asks it to multiply the ephemeral point by the
/// binding key's private part, which never leaves it. Another TPM, or this one after `tpm2_clear`,
/// has another binding key: the key point each answer carries says whose it is.
///
/// With `pcr7` (this-device-only+pcr7) the binding key also carries an authPolicy of PolicyPCR
/// over PCR 7 as it was at wrapping, kept with what is sealed: the TPM unwraps only while PCR 7
/// (the Secure Boot state) is that value again.
struct MachineBinding: Sendable {
    let milliseconds: UInt32
    /// Whether what is wrapped from now on is bound to PCR 7 too; unwrapping follows the envelope.
    var pcr7 = false

    struct Wrapped {
        /// The binding key's public point (x ‖ y): whose TPM this is.
        var key: [UInt8]
        /// The ephemeral public point (x ‖ y), kept with what is sealed.
        var ephemeral: [UInt8]
        /// The shared secret (ECDH's x), never kept; empty when the TPM refused the PCR 7 policy.
        var shared: [UInt8]
        /// The binding key's authPolicy (32 bytes) with PCR 7; empty without.
        var policy: [UInt8] = []
    }

    /// The binding key's unique: SHA-256(len32(label) ‖ label), the label the TPM's facts hold.
    static var unique: [UInt8] {
        let label = Array(DIDS_TPM_LABEL_THIS_DEVICE_ONLY.utf8)
        let n = UInt32(label.count)
        return SHA256.hash([UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)] + label)
    }

    /// A fresh wrapping: TPM2_ECDH_KeyGen with the binding key, on the TPM at `address` (with this
    /// machine's pin for it: `TPMAddress.resolvedWithPin()`, which the layer above attaches).
    func wrap(at address: TPMAddress) throws(DeviceIDError) -> Wrapped {
        let unique = Self.unique, pcr7 = self.pcr7
        return try TPMConversation.run(address, milliseconds: milliseconds) { tpm, failure in
            var ephemeral = [UInt8](), shared = [UInt8](), policy = [UInt8]()
            let (ok, key) = TPMConversation.withBuffer(capacity: 64) { key in
                let (ok, e) = TPMConversation.withBuffer(capacity: 64) { e in
                    let (ok, s) = TPMConversation.withBuffer(capacity: 32) { s in
                        let (ok, p) = TPMConversation.withBuffer(capacity: 32) { p in
                            unique.withUnsafeBufferPointer {
                                pcr7 ? dids_tpm_binding_wrap(tpm, $0.baseAddress, &p, &key, &e, &s, &failure)
                                     : dids_tpm_binding_wrap(tpm, $0.baseAddress, nil, &key, &e, &s, &failure)
                            }
                        }
                        policy = p
                        return ok
                    }
                    shared = s
                    return ok
                }
                ephemeral = e
                return ok
            }
            return ok != 0 ? Wrapped(key: key, ephemeral: ephemeral, shared: shared, policy: policy) : nil
        }
    }

    /// The shared secret of `ephemeral` on this TPM (TPM2_ECDH_ZGen), with this TPM's key point;
    /// with a `policy` (32 bytes), under PolicyPCR over PCR 7 as it is now, the shared secret
    /// empty when the TPM refuses that policy.
    func unwrap(_ ephemeral: [UInt8], policy: [UInt8] = [], at address: TPMAddress) throws(DeviceIDError) -> Wrapped {
        guard ephemeral.count == 64, policy.isEmpty || policy.count == 32 else {
            throw DeviceIDError(.corrupt, "a sealed value's wrapped key is malformed")
        }
        let unique = Self.unique
        return try TPMConversation.run(address, milliseconds: milliseconds) { tpm, failure in
            var shared = [UInt8]()
            let (ok, key) = TPMConversation.withBuffer(capacity: 64) { key in
                let (ok, s) = TPMConversation.withBuffer(capacity: 32) { s in
                    unique.withUnsafeBufferPointer { u in
                        ephemeral.withUnsafeBufferPointer { e in
                            policy.withUnsafeBufferPointer { p in
                                dids_tpm_binding_unwrap(tpm, u.baseAddress, policy.isEmpty ? nil : p.baseAddress, e.baseAddress,
                                                        &key, &s, &failure)
                            }
                        }
                    }
                }
                shared = s
                return ok
            }
            return ok != 0 ? Wrapped(key: key, ephemeral: ephemeral, shared: shared, policy: policy) : nil
        }
    }

    /// This TPM's binding key point, for reports (`doctor`): whether a TPM can bind here at all;
    /// with `pcr7`, also PCR 7's value now (SHA-256 bank), which a TPM without that bank cannot give.
    func keyPoint(at address: TPMAddress) throws(DeviceIDError) -> (key: [UInt8], pcr7: [UInt8]) {
        let unique = Self.unique, pcr7 = self.pcr7
        return try TPMConversation.run(address, milliseconds: milliseconds) { tpm, failure in
            var value = [UInt8]()
            let (ok, key) = TPMConversation.withBuffer(capacity: 64) { key in
                var shared = dids_tpm_bytes()
                guard unique.withUnsafeBufferPointer({ dids_tpm_binding_unwrap(tpm, $0.baseAddress, nil, nil, &key, &shared, &failure) }) != 0
                else { return Int32(0) }
                guard pcr7 else { return 1 }
                let (ok, v) = TPMConversation.withBuffer(capacity: 32) { dids_tpm_pcr7(tpm, &$0, &failure) }
                value = v
                return ok
            }
            return ok != 0 ? (key, value) : nil
        }
    }
}
