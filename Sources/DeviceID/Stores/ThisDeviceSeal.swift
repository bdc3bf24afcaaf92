import CDeviceIDTPM

/// A this-device-only value at rest (docs/STATE.md, "Protection classes"): sealed under a key only
/// the TPM that sealed it computes again (`MachineBinding`). Layout:
///
///     offset  size  field
///     0       8     magic "DIDTDO1\0"
///     8       16    the binding key's fingerprint: SHA-256(its point x ‖ y), first 16 bytes
///     24      16    the machine fingerprint at sealing (`MachineID.fingerprint`; zeros: none)
///     40      64    the ephemeral point (x ‖ y) the binding key unwraps
///     104     N+36  `Sealing` (AES-256-GCM) of the value under SHA-256(label ‖ ECDH's x), its
///                   context the item's store key and the 104 bytes above
///
/// An envelope whose binding key is not this TPM's is `.copied`, with words telling another
/// machine from this one's cleared TPM (the machine fingerprint); one that names this TPM and
/// does not open is `.corrupt`.
enum ThisDeviceSeal {
    static let magic: [UInt8] = Array("DIDTDO1".utf8) + [0]
    static let headerSize = 104
    /// What sealing adds to a value: 140 bytes.
    static let overhead = headerSize + Sealing.overhead

    static func isSealed(_ bytes: [UInt8]) -> Bool {
        bytes.count >= overhead && bytes.starts(with: magic)
    }

    static func seal(_ value: [UInt8], context: [UInt8], binding: MachineBinding) throws(DeviceIDError) -> [UInt8] {
        let wrapped = try binding.wrap()
        let machine = MachineID.fingerprint() ?? [UInt8](repeating: 0, count: 16)
        let header = magic + fingerprint(wrapped.key) + machine + wrapped.ephemeral
        return header + (try Sealing.seal(value, key: sealingKey(wrapped.shared), context: context + header))
    }

    static func open(_ envelope: [UInt8], context: [UInt8], binding: MachineBinding) throws(DeviceIDError) -> [UInt8] {
        guard isSealed(envelope) else { throw DeviceIDError(.corrupt, "a this-device-only value is malformed") }
        let header = Array(envelope[0..<headerSize])
        let unwrapped = try binding.unwrap(Array(header[40..<104]))
        guard fingerprint(unwrapped.key) == Array(header[8..<24]) else {
            let machine = Array(header[24..<40])
            if machine != [UInt8](repeating: 0, count: 16), machine == MachineID.fingerprint() {
                throw DeviceIDError(.copied, "this machine's TPM was cleared or replaced since it was sealed here, "
                                    + "and no TPM can open it again; reset it to have a new one made here")
            }
            throw DeviceIDError(.copied, "it was sealed on another machine (a home copied here, a backup restored "
                                + "on a new machine, a cloned disk) and opens only there; reset it to have one made for "
                                + "this machine")
        }
        do {
            return try Sealing.open(Array(envelope[headerSize...]), key: sealingKey(unwrapped.shared), context: context + header)
        } catch {
            throw DeviceIDError(.corrupt, "a this-device-only value sealed by this TPM does not open: altered, or "
                                + "moved from another item")
        }
    }

    private static func fingerprint(_ point: [UInt8]) -> [UInt8] { Array(SHA256.hash(point).prefix(16)) }

    private static func sealingKey(_ shared: [UInt8]) -> [UInt8] {
        SHA256.hash(Array(DIDS_TPM_LABEL_THIS_DEVICE_ONLY.utf8) + shared)
    }
}
