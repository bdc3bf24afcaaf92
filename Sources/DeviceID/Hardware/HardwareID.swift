import CDeviceIDTPM

/// The hardware-bound, per-app ID (docs/HARDWARE-ID.md): the Name of a key the TPM derives from
/// its storage primary seed and the app id, hashed into a UUID. Stored nowhere; the same on the
/// same TPM until its owner hierarchy is cleared; unlinkable across app ids.
enum HardwareIdentity {
    // The labels: the TPM's facts (tpm-facts.tsv), frozen.
    static var label: String { DIDS_TPM_LABEL_HARDWARE_ID }
    static var nameLabel: String { DIDS_TPM_LABEL_HARDWARE_ID_NAME }
    static var attestationKeyLabel: String { DIDS_TPM_LABEL_ATTESTATION_KEY }
    static var credentialKeyLabel: String { DIDS_TPM_LABEL_CREDENTIAL_KEY }
    static var counterLabel: String { DIDS_TPM_LABEL_ASSERTION_COUNTER }

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

    /// The app's credential key template's unique.x (WebAuthn's attested credential):
    /// SHA-256(len32(label) ‖ label ‖ len32(app id) ‖ app id), with its own label.
    static func credentialKeyUnique(appID: String) -> [UInt8] {
        SHA256.hash(lengthPrefixed(credentialKeyLabel) + lengthPrefixed(appID))
    }

    /// The tag of the app's assertion counter: its NV index's authPolicy, whose first 24 bits
    /// name its slot in the owner range: SHA-256(len32(label) ‖ label ‖ len32(app id) ‖ app id).
    static func counterTag(appID: String) -> [UInt8] {
        SHA256.hash(lengthPrefixed(counterLabel) + lengthPrefixed(appID))
    }

    /// UUIDv8 (RFC 9562) of SHA-256("deviceid.hardware-id.v1/name" ‖ Name).
    static func id(fromName name: [UInt8]) -> ID128 {
        var h = Array(SHA256.hash(Array(nameLabel.utf8) + name)[0..<16])
        h[6] = h[6] & 0x0f | 0x80
        h[8] = h[8] & 0x3f | 0x80
        return ID128(bytes: h)!
    }

    /// Asks the TPM every time: nothing is kept, on disk (a copy could have come from another
    /// machine with a cloned disk) or in memory (0.3.0's cache kept answering the old ID after a
    /// `tpm2_clear`, and after an owner password was set, while `attest()` in the same process
    /// certified the new key). So the ID follows a clear, a replaced TPM or a new owner password
    /// at the next call, and `hardwareID` and the evidence's `hardware_id` never disagree.
    static func id(appID: String, address: TPMAddress, milliseconds: UInt32) throws(DeviceIDError) -> ID128 {
        let unique = Self.unique(appID: appID)
        let name: [UInt8] = try TPMConversation.run(address, milliseconds: milliseconds) { tpm, failure in
            let (ok, name) = TPMConversation.withBuffer(capacity: 68) { buffer in
                unique.withUnsafeBufferPointer {
                    dids_tpm_key_name(tpm, DIDS_TPM_APP_KEY, $0.baseAddress, &buffer, nil, &failure)
                }
            }
            return ok != 0 ? name : nil
        }
        return id(fromName: name)
    }
}
