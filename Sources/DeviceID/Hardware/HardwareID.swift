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

    /// Answers already computed in this process, per TPM and app id. Memory only: a copy on
    /// disk could have come from another machine with a cloned disk.
    private static let cache = Locked<[String: ID128]>([:])

    static func id(appID: String, address: TPMAddress, milliseconds: UInt32) throws(DeviceIDError) -> ID128 {
        let key = address.description + "\n" + appID
        if let known = cache.withLock({ $0[key] }) { return known }
        let unique = Self.unique(appID: appID)
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

extension DeviceIdentity {
    /// This device's hardware-bound identifier for `appID`, from its TPM 2.0: the same on every
    /// call, process, reinstall and after every store is wiped; another for each app id, with no
    /// link between them; a new one only when the TPM is cleared or replaced. Stored nowhere
    /// (kept in memory for the process). The TPM is `/dev/tpmrm0` unless `DEVICEID_TPM_TCTI`
    /// names another. Throws `.unavailable` without a TPM, `.permission` when this user may not
    /// use it (the `tss` group), `.locked` in dictionary-attack lockout, `.timedOut` past the
    /// configured deadline.
    public func hardwareID(for appID: String) throws(DeviceIDError) -> ID128 {
        try Names.validate(appID, "app id")
        let address = try TPMAddress.resolved()
        return try HardwareIdentity.id(appID: appID, address: address,
                                       milliseconds: try configuration().timeoutMilliseconds)
    }
}
