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
/// this-device-only+pcr7 (`MachineBinding.pcr7`) seals with the magic "DIDTDP7\0" and the 104
/// bytes above followed by the binding key's authPolicy (32 bytes: PolicyPCR over PCR 7 at
/// sealing), in the context too: 172 bytes in all.
///
/// An envelope whose binding key is not this TPM's is `.copied`, with words telling another
/// machine from this one's cleared TPM (the machine fingerprint); a PCR 7 envelope whose policy
/// the TPM refuses is `.copied` too, in words of its own (the Secure Boot state changed); one that
/// names this TPM and does not open is `.corrupt`.
enum ThisDeviceSeal {
    static let magic: [UInt8] = Array("DIDTDO1".utf8) + [0]
    static let pcr7Magic: [UInt8] = Array("DIDTDP7".utf8) + [0]
    static let headerSize = 104
    static let pcr7HeaderSize = headerSize + 32
    /// What sealing adds to a value: 140 bytes, 172 with PCR 7.
    static func overhead(_ binding: MachineBinding) -> Int {
        (binding.pcr7 ? pcr7HeaderSize : headerSize) + Sealing.overhead
    }

    static func isSealed(_ bytes: [UInt8]) -> Bool {
        (bytes.count >= headerSize + Sealing.overhead && bytes.starts(with: magic))
            || (bytes.count >= pcr7HeaderSize + Sealing.overhead && bytes.starts(with: pcr7Magic))
    }

    static func seal(_ value: [UInt8], context: [UInt8], binding: MachineBinding) throws(DeviceIDError) -> [UInt8] {
        let wrapped = try binding.wrap(at: try TPMAddress.resolvedWithPin())
        let machine = MachineID.fingerprint() ?? [UInt8](repeating: 0, count: 16)
        let header = (binding.pcr7 ? pcr7Magic : magic) + fingerprint(wrapped.key) + machine + wrapped.ephemeral
            + wrapped.policy
        return header + (try Sealing.seal(value, key: sealingKey(wrapped.shared), context: context + header))
    }

    static func open(_ envelope: [UInt8], context: [UInt8], binding: MachineBinding) throws(DeviceIDError) -> [UInt8] {
        guard isSealed(envelope) else { throw DeviceIDError(.corrupt, "a this-device-only value is malformed") }
        let pcr7 = envelope.starts(with: pcr7Magic)
        let header = Array(envelope[0..<(pcr7 ? pcr7HeaderSize : headerSize)])
        let unwrapped = try binding.unwrap(Array(header[40..<104]), policy: Array(header[104...]),
                                           at: try TPMAddress.resolvedWithPin())
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
        guard !unwrapped.shared.isEmpty else {
            throw DeviceIDError(.copied, "it was sealed to this machine's Secure Boot state (PCR 7), which has changed "
                                + "since (Secure Boot turned off or on, keys or a revocation list (dbx) enrolled): it "
                                + "opens again if that state returns; reset it to have one made for this state")
        }
        do {
            return try Sealing.open(Array(envelope[header.count...]), key: sealingKey(unwrapped.shared), context: context + header)
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
