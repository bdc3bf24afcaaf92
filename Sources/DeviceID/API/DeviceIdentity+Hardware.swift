/// The hardware-bound ID and attestation (Sources/DeviceID/Hardware, docs/HARDWARE-ID.md): each
/// call is one conversation with the TPM that `DEVICEID_TPM_TCTI` names (the kernel's resource
/// manager by default), bounded by the configured deadline.
extension DeviceIdentity {
    /// This device's hardware-bound identifier for `appID`, from its TPM 2.0: the same on every
    /// call, process, reinstall and after every store is wiped; another for each app id, with no
    /// link between them; a new one only when the TPM is cleared or replaced. Stored nowhere, not
    /// even in memory: each call asks the TPM, so it follows a clear at the next call. The TPM is `/dev/tpmrm0` unless `DEVICEID_TPM_TCTI`
    /// names another. Throws `.unavailable` without a TPM, `.permission` when this user may not
    /// use it (the `tss` group), `.locked` in dictionary-attack lockout, `.timedOut` past the
    /// configured deadline.
    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.hardwareID(for:)'")
    public func hardwareID(for appID: String) throws(DeviceIDError) -> ID128 {
        try Names.validate(appID, "app id")
        let address = try TPMAddress.resolvedWithPin()
        return try HardwareIdentity.id(appID: appID, address: address,
                                       milliseconds: try configuration().timeoutMilliseconds)
    }

    /// The enrolment request for `appID`'s attestation key (docs/HARDWARE-ID.md, wire format v1):
    /// `{"v":1,"type":"deviceid.enrolment-request","app_id":…,"ek_kind":…,"ek_certificate":…,"ak_public":…}`,
    /// with `ek_certificate_<kind>` for each further EK the TPM holds; where it holds none,
    /// `ek_public` (the L-1 EK's public area), and the platform AK's certificate where there is one.
    /// Throws `.unsupported` when the only EK certificates are of EKs made from a template in NV.
    /// Bounded by at least 60 s: it may create an endorsement key or a platform AK.
    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.attestationEnrolment(for:)'")
    public func attestationEnrolment(for appID: String) throws(DeviceIDError) -> String {
        try Names.validate(appID, "app id")
        return try TPMAttestation.enrolment(
            for: appID, address: try TPMAddress.resolvedWithPin(),
            milliseconds: TPMAttestation.endorsementMilliseconds(try configuration().timeoutMilliseconds))
    }

    /// The response to the attestation CA's challenge for `appID`'s attestation key
    /// (TPM2_ActivateCredential with the EK the challenge's `ek_kind` names). Bounded by at least
    /// 60 s: it creates that endorsement key.
    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.attestationActivation(for:challenge:)'")
    public func attestationActivation(for appID: String, challenge: String) throws(DeviceIDError) -> String {
        try Names.validate(appID, "app id")
        return try TPMAttestation.activation(
            for: appID, challenge: challenge, address: try TPMAddress.resolvedWithPin(),
            milliseconds: TPMAttestation.endorsementMilliseconds(try configuration().timeoutMilliseconds))
    }

    /// Evidence for `appID`'s server: TPM2_Certify of the app key by the app's attestation key
    /// over `nonce` (1 to 64 bytes the server chose), with the CA's AK certificate message when
    /// given. Its `hardware_id` is `hardwareID(for: appID)`.
    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.attestation(for:nonce:akCertificate:)'")
    public func attestation(for appID: String, nonce: [UInt8], akCertificate: String? = nil) throws(DeviceIDError) -> String {
        try Names.validate(appID, "app id")
        return try TPMAttestation.evidence(for: appID, nonce: nonce, akCertificate: akCertificate,
                                           address: try TPMAddress.resolvedWithPin(),
                                           milliseconds: try configuration().timeoutMilliseconds)
    }

    /// App Attest's registration for Linux: WebAuthn's "tpm" attestation (W3C WebAuthn §8.3) of
    /// `appID`'s credential key, certified by the app's attestation key over `clientDataHash`
    /// (SHA-256 of the WebAuthn client data holding the server's challenge: 32 bytes), with the
    /// CA's AK certificate message (`"type":"deviceid.ak-certificate"`, from an AIK-profile CA).
    /// `{"v":1,"type":"deviceid.webauthn-attestation","app_id":…,"credential_id":…,
    /// "attestation_object":…}`, base64url without padding; any WebAuthn verifier registers the
    /// credential from it for relying party id `appID` (docs/HARDWARE-ID.md).
    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.webAuthnAttestation(for:clientDataHash:akCertificate:)'")
    public func webAuthnAttestation(for appID: String, clientDataHash: [UInt8],
                                    akCertificate: String) throws(DeviceIDError) -> String {
        try Names.validate(appID, "app id")
        return try WebAuthnAttestation.attestation(for: appID, clientDataHash: clientDataHash,
                                                   akCertificate: akCertificate, address: try TPMAddress.resolvedWithPin(),
                                                   milliseconds: try configuration().timeoutMilliseconds)
    }

    /// App Attest's per-request proof for Linux: a WebAuthn assertion by `appID`'s credential key
    /// over `clientDataHash` (32 bytes), its signCount the app's counter in the TPM, incremented by
    /// this call: `{"v":1,"type":"deviceid.webauthn-assertion","app_id":…,"credential_id":…,
    /// "authenticator_data":…,"signature":…,"counter":…}`. The server checks the signature with
    /// the key it registered from `webAuthnAttestation` and that the counter grew (an equal or
    /// lower one is a replay or a cloned TPM). Throws `.unavailable` without a TPM, `.noMemory`
    /// when the TPM's NV memory has no room for the app's counter.
    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.webAuthnAssertion(for:clientDataHash:)'")
    public func webAuthnAssertion(for appID: String, clientDataHash: [UInt8]) throws(DeviceIDError) -> String {
        try Names.validate(appID, "app id")
        return try WebAuthnAssertion.assertion(for: appID, clientDataHash: clientDataHash,
                                               address: try TPMAddress.resolvedWithPin(),
                                               milliseconds: try configuration().timeoutMilliseconds)
    }

    /// Forgets this machine's pin for the TPM `DEVICEID_TPM_TCTI` names (docs/STATE.md, "TPM
    /// pins"): the Name of the key its sessions were first salted to. After `tpm2_clear` or a new
    /// TPM, the conversations refuse the new key (`.io`) until its pin is forgotten; the next one
    /// pins the key it meets. No ID depends on a pin. The TPM's address, and whether a pin was held.
    public func forgetTPMPin() throws(DeviceIDError) -> (address: TPMAddress, forgotten: Bool) {
        let address = try TPMAddress.resolved()
        return (address, try TPMPins.forget(address))
    }
}
