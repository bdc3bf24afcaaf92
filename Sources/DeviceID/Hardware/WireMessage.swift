/// The message types of wire format v1 the device writes and reads (docs/HARDWARE-ID.md). Each
/// name is owned by its schema in docs/schemas (the `"type"` property's one value);
/// Tests/python/test_docs.py holds these, and the verifier's `_wire.py`, to them.
enum WireMessage: String {
    case enrolmentRequest = "deviceid.enrolment-request"
    case enrolmentChallenge = "deviceid.enrolment-challenge"
    case enrolmentResponse = "deviceid.enrolment-response"
    case akCertificate = "deviceid.ak-certificate"
    case attestation = "deviceid.attestation"
    case webAuthnAttestation = "deviceid.webauthn-attestation"
    case webAuthnAssertion = "deviceid.webauthn-assertion"
}
