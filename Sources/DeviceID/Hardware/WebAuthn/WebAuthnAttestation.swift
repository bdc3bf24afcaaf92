import CDeviceIDTPM

/// App Attest for Linux, registration: WebAuthn's "tpm" attestation of the app's credential key,
/// certified by the app's attestation key (AK), whose certificate the Privacy CA issued in the
/// TCG AIK profile (docs/HARDWARE-ID.md). What it prints any WebAuthn verifier accepts as a
/// registration of a credential for relying party id = the app id.
enum WebAuthnAttestation {
    static let wireVersion = 1

    /// `{"v":1,"type":"deviceid.webauthn-attestation","app_id":…,"credential_id":…,
    /// "attestation_object":…}` (base64url without padding) for the server of `appID`, over
    /// `clientDataHash` (SHA-256 of the client data, 32 bytes), with the AK certificate message
    /// the CA issued (`"type":"deviceid.ak-certificate"`).
    static func attestation(for appID: String, clientDataHash: [UInt8], akCertificate: String, address: TPMAddress,
                            milliseconds: UInt32) throws(DeviceIDError) -> String {
        guard clientDataHash.count == WebAuthnTPM.clientDataHashSize else {
            throw DeviceIDError(.invalidArgument, "the client data hash must be \(WebAuthnTPM.clientDataHashSize) bytes "
                                    + "(SHA-256 of the client data), not \(clientDataHash.count)")
        }
        let certificate = try TPMAttestation.bytes(try TPMAttestation.parse(akCertificate, type: .akCertificate),
                                                   "certificate")
        let akUnique = HardwareIdentity.attestationKeyUnique(appID: appID)
        let credentialUnique = HardwareIdentity.credentialKeyUnique(appID: appID)
        typealias Made = (publicArea: [UInt8], authenticatorData: [UInt8], certInfo: [UInt8], signature: [UInt8])
        let made: Made = try TPMConversation.run(address, milliseconds: milliseconds) { tpm, failure in
            // The credential's key first: authData carries it, and certInfo carries a hash of authData.
            let (made, publicArea) = TPMConversation.withBuffer(capacity: 512) { area in
                credentialUnique.withUnsafeBufferPointer {
                    dids_tpm_key_name(tpm, DIDS_TPM_CREDENTIAL_KEY, $0.baseAddress, nil, &area, &failure)
                }
            }
            guard made != 0 else { return nil }
            guard let point = WebAuthnTPM.point(ofPublicArea: publicArea) else {
                failure.stage = Int32(DIDS_TPM_STAGE_SHAPE.rawValue)
                return nil
            }
            let key = WebAuthnTPM.coseKey(x: point.x, y: point.y)
            let authenticatorData = WebAuthnTPM.authenticatorData(
                appID: appID, flags: WebAuthnTPM.attestedCredentialFlag, counter: 0,
                credential: (WebAuthnTPM.credentialID(publicArea), key))
            let extraData = SHA256.hash(authenticatorData + clientDataHash)
            guard let certified = TPMConversation.certify(tpm, &failure, ak: akUnique, DIDS_TPM_CREDENTIAL_KEY,
                                                          credentialUnique, over: extraData) else { return nil }
            // The TPM derives the same key from the same template; another one would leave
            // authData naming a key certInfo does not certify.
            guard certified.certifiedPublic == publicArea,
                  let der = WebAuthnTPM.derSignature(ofTPMSignature: certified.signature) else {
                failure.stage = Int32(DIDS_TPM_STAGE_SHAPE.rawValue)
                return nil
            }
            return (publicArea, authenticatorData, certified.attest, der)
        }
        let object = WebAuthnTPM.attestationObject(authenticatorData: made.authenticatorData, certificates: [certificate],
                                                   signature: made.signature, certInfo: made.certInfo,
                                                   publicArea: made.publicArea)
        var json = TPMAttestation.message(.webAuthnAttestation)
        json.set("app_id", appID)
        json.set("credential_id", Base64.encodeURL(WebAuthnTPM.credentialID(made.publicArea)))
        json.set("attestation_object", Base64.encodeURL(object))
        return json.text
    }
}
