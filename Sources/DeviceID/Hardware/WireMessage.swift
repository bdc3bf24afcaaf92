/// The message types of wire format v1 the device writes and reads (docs/HARDWARE-ID.md). Each
/// name is owned by its schema in docs/schemas (the `"type"` property's one value);
/// Tests/python/test_docs.py holds these, and the verifier's `_wire.py`, to them.
enum WireMessage {
    static let enrolmentRequest = "deviceid.enrolment-request"
    static let enrolmentChallenge = "deviceid.enrolment-challenge"
    static let enrolmentResponse = "deviceid.enrolment-response"
    static let akCertificate = "deviceid.ak-certificate"
    static let attestation = "deviceid.attestation"
    static let webAuthnAttestation = "deviceid.webauthn-attestation"
    static let webAuthnAssertion = "deviceid.webauthn-assertion"
}
