import CDeviceIDLibraries

/// The hardware-bound, per-app ID (docs/HARDWARE-ID.md): the Name of a key the TPM derives from
/// its storage primary seed and the app id, hashed into a UUID. Stored nowhere; the same on the
/// same TPM until its owner hierarchy is cleared; unlinkable across app ids.
enum HardwareIdentity {
    static let label = "deviceid.hardware-id.v1"
    static let nameLabel = "deviceid.hardware-id.v1/name"
    static let attestationKeyLabel = "deviceid.attestation-key.v1"

    private static func lengthPrefixed(_ text: String) -> [UInt8] {
        let bytes = Array(text.utf8)
        let n = UInt32(bytes.count)
        return [UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)] + bytes
    }

    /// The app key template's unique.x: SHA-256(len32(label) ‖ label ‖ len32(app id) ‖ app id).
    static func unique(appID: String) -> [UInt8] {
        SHA256.hash(lengthPrefixed(label) + lengthPrefixed(appID))
    }

    /// The app's attestation key template's unique.x:
    /// SHA-256(len32(label) ‖ label ‖ len32(app id) ‖ app id). One AK per app, so that app
    /// servers, which see the AK in every piece of evidence, cannot link one device's apps.
    static func attestationKeyUnique(appID: String) -> [UInt8] {
        SHA256.hash(lengthPrefixed(attestationKeyLabel) + lengthPrefixed(appID))
    }

    /// UUIDv8 (RFC 9562) of SHA-256("deviceid.hardware-id.v1/name" ‖ Name).
    static func id(fromName name: [UInt8]) -> ID128 {
        var h = Array(SHA256.hash(Array(nameLabel.utf8) + name)[0..<16])
        h[6] = h[6] & 0x0f | 0x80
        h[8] = h[8] & 0x3f | 0x80
        return ID128(bytes: h)!
    }

    /// Answers already computed in this process, per TPM and template. Memory only: a copy on
    /// disk could have come from another machine with a cloned disk. Keyed by the bytes the TPM
    /// is given, not the app id as a String, whose equality is Unicode canonical equivalence:
    /// "café" in NFC and NFD are one String but two app ids, and two IDs.
    private static let cache = Locked<[[UInt8]: ID128]>([:])

    static func id(appID: String, address: TPMAddress, milliseconds: UInt32) throws(DeviceIDError) -> ID128 {
        let unique = Self.unique(appID: appID)
        let key = Array(address.description.utf8) + [0] + unique
        if let known = cache.withLock({ $0[key] }) { return known }
        let name: [UInt8] = try TPMConversation.run(address, milliseconds: milliseconds) { tpm, failure in
            let (ok, name) = TPMConversation.withBuffer(capacity: 68) { buffer in
                unique.withUnsafeBufferPointer { dids_tpm_app_key(tpm, $0.baseAddress, &buffer, nil, &failure) }
            }
            return ok != 0 ? name : nil
        }
        let id = id(fromName: name)
        cache.withLock { $0[key] = id }
        return id
    }
}
