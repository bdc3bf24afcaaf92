import CDeviceIDTPM

/// The TPM half of this-device-only (docs/STATE.md, "Protection classes"; docs/HARDWARE-ID.md,
/// "This-device-only binding"): a 32-byte secret only this TPM can compute again. Wrapping asks
/// the TPM for an ephemeral ECDH key pair against its binding key (a primary of the owner
/// hierarchy, one fixed template); unwrapping asks it to multiply the ephemeral point by the
/// binding key's private part, which never leaves it. Another TPM, or this one after `tpm2_clear`,
/// has another binding key: the key point each answer carries says whose it is.
struct MachineBinding: Sendable {
    let milliseconds: UInt32

    struct Wrapped {
        /// The binding key's public point (x ‖ y): whose TPM this is.
        var key: [UInt8]
        /// The ephemeral public point (x ‖ y), kept with what is sealed.
        var ephemeral: [UInt8]
        /// The shared secret (ECDH's x), never kept.
        var shared: [UInt8]
    }

    /// The binding key's unique: SHA-256(len32(label) ‖ label), the label the TPM's facts hold.
    static var unique: [UInt8] {
        let label = Array(DIDS_TPM_LABEL_THIS_DEVICE_ONLY.utf8)
        let n = UInt32(label.count)
        return SHA256.hash([UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)] + label)
    }

    /// A fresh wrapping: TPM2_ECDH_KeyGen with the binding key.
    func wrap() throws(DeviceIDError) -> Wrapped {
        let unique = Self.unique
        return try TPMConversation.run(try TPMAddress.resolved(), milliseconds: milliseconds) { tpm, failure in
            var ephemeral = [UInt8](), shared = [UInt8]()
            let (ok, key) = TPMConversation.withBuffer(capacity: 64) { key in
                let (ok, e) = TPMConversation.withBuffer(capacity: 64) { e in
                    let (ok, s) = TPMConversation.withBuffer(capacity: 32) { s in
                        unique.withUnsafeBufferPointer { dids_tpm_binding_wrap(tpm, $0.baseAddress, &key, &e, &s, &failure) }
                    }
                    shared = s
                    return ok
                }
                ephemeral = e
                return ok
            }
            return ok != 0 ? Wrapped(key: key, ephemeral: ephemeral, shared: shared) : nil
        }
    }

    /// The shared secret of `ephemeral` on this TPM (TPM2_ECDH_ZGen), with this TPM's key point.
    func unwrap(_ ephemeral: [UInt8]) throws(DeviceIDError) -> Wrapped {
        guard ephemeral.count == 64 else { throw DeviceIDError(.corrupt, "a sealed value's wrapped key is malformed") }
        let unique = Self.unique
        return try TPMConversation.run(try TPMAddress.resolved(), milliseconds: milliseconds) { tpm, failure in
            var shared = [UInt8]()
            let (ok, key) = TPMConversation.withBuffer(capacity: 64) { key in
                let (ok, s) = TPMConversation.withBuffer(capacity: 32) { s in
                    unique.withUnsafeBufferPointer { u in
                        ephemeral.withUnsafeBufferPointer { dids_tpm_binding_unwrap(tpm, u.baseAddress, $0.baseAddress, &key, &s, &failure) }
                    }
                }
                shared = s
                return ok
            }
            return ok != 0 ? Wrapped(key: key, ephemeral: ephemeral, shared: shared) : nil
        }
    }

    /// This TPM's binding key point, for reports (`doctor`): whether a TPM can bind here at all.
    func keyPoint() throws(DeviceIDError) -> [UInt8] {
        let unique = Self.unique
        return try TPMConversation.run(try TPMAddress.resolved(), milliseconds: milliseconds) { tpm, failure in
            let (ok, key) = TPMConversation.withBuffer(capacity: 64) { key in
                var shared = dids_tpm_bytes()
                return unique.withUnsafeBufferPointer { dids_tpm_binding_unwrap(tpm, $0.baseAddress, nil, &key, &shared, &failure) }
            }
            return ok != 0 ? key : nil
        }
    }
}
