import CDeviceIDTPM

/// App Attest for Linux, each request: a WebAuthn assertion by the app's credential key, whose
/// signCount is the app's counter in the TPM (docs/HARDWARE-ID.md, "Assertions"). The server that
/// registered the credential checks the signature with the key it registered and that the counter
/// grew: an equal or lower count is a replay, or a clone of the TPM's state.
enum WebAuthnAssertion {
    /// Authenticator data flags of an assertion: none. No person is asked (UP, UV), no attested
    /// data or extensions follow (AT, ED), the key is never backed up (BE, BS).
    static let flags: UInt8 = 0x00

    /// `{"v":1,"type":"deviceid.webauthn-assertion","app_id":…,"credential_id":…,
    /// "authenticator_data":…,"signature":…,"counter":…}` over `clientDataHash` (SHA-256 of the
    /// client data, 32 bytes); the binary fields base64url without padding.
    static func assertion(for appID: String, clientDataHash: [UInt8], address: TPMAddress,
                          milliseconds: UInt32) throws(DeviceIDError) -> String {
        guard clientDataHash.count == WebAuthnTPM.clientDataHashSize else {
            throw DeviceIDError(.invalidArgument, "the client data hash must be \(WebAuthnTPM.clientDataHashSize) bytes "
                                    + "(SHA-256 of the client data), not \(clientDataHash.count)")
        }
        let tag = HardwareIdentity.counterTag(appID: appID)
        let credentialUnique = HardwareIdentity.credentialKeyUnique(appID: appID)
        typealias Signed = (counter: UInt32, authenticatorData: [UInt8], signature: [UInt8], publicArea: [UInt8])
        let outcome: Result<Signed, DeviceIDError> = try TPMConversation.run(address, milliseconds: milliseconds) {
            tpm, failure in
            var index: UInt32 = 0, value: UInt64 = 0
            guard tag.withUnsafeBufferPointer({ dids_tpm_counter_increment(tpm, $0.baseAddress, &index, &value, &failure) })
                    != 0 else { return nil }
            guard let counter = UInt32(exactly: value) else {
                return .failure(DeviceIDError(.unsupported, "the TPM's counter for \(appID) (NV index 0x\(String(index, radix: 16))) "
                                                  + "is at \(value), past the 32 bits of WebAuthn's signCount"))
            }
            let authenticatorData = WebAuthnTPM.authenticatorData(appID: appID, flags: flags, counter: counter,
                                                                  credential: nil)
            let digest = SHA256.hash(authenticatorData + clientDataHash)
            var publicArea = [UInt8]()
            let (ok, signature) = TPMConversation.withBuffer(capacity: 512) { signature in
                let (ok, area) = TPMConversation.withBuffer(capacity: 512) { area in
                    credentialUnique.withUnsafeBufferPointer { u in
                        digest.withUnsafeBufferPointer { d in
                            dids_tpm_sign(tpm, DIDS_TPM_CREDENTIAL_KEY, u.baseAddress, d.baseAddress, &signature, &area,
                                          &failure)
                        }
                    }
                }
                publicArea = area
                return ok
            }
            guard ok != 0 else { return nil }
            guard let der = WebAuthnTPM.derSignature(ofTPMSignature: signature) else {
                failure.stage = Int32(DIDS_TPM_STAGE_SHAPE.rawValue)
                return nil
            }
            return .success((counter, authenticatorData, der, publicArea))
        }
        let signed = try outcome.get()
        var json = TPMAttestation.message(.webAuthnAssertion)
        json.set("app_id", appID)
        json.set("credential_id", Base64.encodeURL(WebAuthnTPM.credentialID(signed.publicArea)))
        json.set("authenticator_data", Base64.encodeURL(signed.authenticatorData))
        json.set("signature", Base64.encodeURL(signed.signature))
        json.set("counter", Int(signed.counter))
        return json.text
    }
}
