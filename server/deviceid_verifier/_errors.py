"""Rejected, the one exception a verification raises, and its stable reason codes."""

from __future__ import annotations

from typing import Mapping, Optional

#: Every reason a Rejected can carry, with what it means. The codes are stable: callers may
#: log them, count them and branch on them.
REASONS: Mapping[str, str] = {
    "malformed": "not JSON, a field missing or of the wrong kind, bad base64, a TPM structure that does not parse, "
                 "or an enrolment request's app id that is not 1 to 255 UTF-8 bytes without control characters",
    "version": "the message's \"v\" is missing or not a version this code speaks (1)",
    "message-type": "the message's \"type\" is not the one expected at this step",
    "nonce-unknown": "the nonce was never issued by this verifier",
    "nonce-expired": "the nonce was issued by this verifier but its lifetime is over",
    "nonce-replayed": "the nonce was issued by this verifier and already used",
    "nonce-mismatch": "the evidence, or the TPM's extraData, carries another nonce than the one being checked",
    "ak-untrusted": "no AK certificate, or it does not chain to a trusted CA, or it is not an AK certificate; for a "
                    "WebAuthn assertion, the AK certificate that certified the credential has expired or its CA is no "
                    "longer trusted",
    "ak-app-id-missing": "the AK certificate names no app id (it has not exactly one canonical "
                         "urn:deviceid:app-id: URI)",
    "ak-mismatch": "the AK certificate and the AK public area do not name one key, or a platform AK certified "
                   "another key than the enrolment request's AK",
    "ak-hierarchy": "TPMS_ATTEST.qualifiedSigner is not the AK as a primary of the owner hierarchy (e.g. an AK of "
                    "the same template in the endorsement hierarchy, whose attestations are not obfuscated)",
    "signature": "the signature over TPMS_ATTEST is not a valid ECDSA P-256 / SHA-256 signature of the AK, or, in an "
                 "enrolment by a platform AK, not a valid signature of that AK's certificate key",
    "not-tpm-generated": "TPMS_ATTEST.magic is not TPM_GENERATED_VALUE",
    "wrong-type": "TPMS_ATTEST.type is not TPM_ST_ATTEST_CERTIFY",
    "app-key-template": "the app key's public area is not the frozen app key template",
    "app-key-mismatch": "the certified Name or qualified Name is not that of the app key sent (an owner-hierarchy primary)",
    "hardware-id-mismatch": "the claimed hardware ID is not the one the certified Name gives",
    "app-id-mismatch": "the evidence's app id is not the one its AK certificate names, or not the one the caller expects",
    "ek-untrusted": "the EK certificate (or the platform AK certificate) does not chain to a trusted root, or the "
                    "TPM keeps none in NV and the CA was given none for it",
    "ek-mismatch": "the EK certificates offered are of no kind the CA accepts, or hold another kind of key than "
                   "their kind's (or the platform AK certificate holds neither RSA 2048+ nor ECC P-256/P-384)",
    "ak-template": "the AK public area is not a restricted ECDSA P-256 attestation key of the frozen template",
    "challenge-unknown": "the enrolment challenge id was never issued, is expired, or was already answered",
    "credential": "the enrolment response carries a wrong credential: the AK is not in the TPM that holds the EK",
    "rate-limited": "this TPM has enrolled as many AKs for this app id as the CA's limit allows in its window, or "
                    "the tenant was issued as many nonces and challenges as its issue limit allows in this window; "
                    "retry_after says when the next one may",
    "revoked": "the AK certificate was revoked by the CA that issued it (in the CA's store, or on its CRL), or its "
               "device (the TPM) was, for this app id: then it cannot enrol again until an operator lifts it",
    "unauthenticated": "the service has tenants, and an app server's request carries no API key of one "
                       "(Authorization: Bearer KEY)",
    "revocation-unknown": "the CRL held for the AK certificate's CA is past its nextUpdate: whether the certificate "
                          "is revoked cannot be told until a current CRL is loaded",
    "client-data": "WebAuthn: the client data is not JSON of the expected type (webauthn.create or webauthn.get), "
                   "its challenge is not base64url, or its origin is not one the server accepts",
    "rp-id-mismatch": "WebAuthn: the authenticator data's rpIdHash is not SHA-256 of the app id",
    "credential-mismatch": "WebAuthn: the attested credential (its id, its COSE key) is not the certified "
                           "credential key, or an assertion names another credential",
    "credential-key-template": "WebAuthn: pubArea is not the frozen credential key template (ECC P-256, scheme NULL)",
    "credential-unknown": "WebAuthn: the assertion names a credential id this server has not registered, or one "
                          "registered before it kept what assertions re-check of the AK certificate (register it again)",
    "token-invalid": "writeDeviceBits: the token is not one this service made (forged, changed, or stamped in the "
                     "future)",
    "token-expired": "writeDeviceBits: the token is older than its window (14 days): write with the token of a newer "
                     "verification of the device",
    "tenant-mismatch": "writeDeviceBits, refreshReceipt: the token or receipt is another tenant's (or of an app id "
                       "no tenant of the key owns)",
    "receipt-invalid": "refreshReceipt: the receipt is not a compact JWS this CA signed with every claim",
    "receipt-expired": "refreshReceipt: the receipt or its AK certificate expired (the HTTP service: 404): the "
                       "device attests again for a new one",
    "counter": "WebAuthn: the assertion's signCount is not above the last one accepted for the credential: a "
               "replayed assertion, or one from a clone of the TPM's state",
}


class Rejected(Exception):
    """A message failed verification.

    `reason` is a stable short code (a key of REASONS); `message` says what was wrong, for people.

    `retry_after`, for "rate-limited" only, is how many seconds later the same request may pass.
    """

    reason: str
    message: str
    retry_after: Optional[float]

    def __init__(self, reason: str, message: str, *, retry_after: Optional[float] = None) -> None:
        if reason not in REASONS:
            raise ValueError(f"unknown rejection reason {reason!r}")
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message
        self.retry_after = retry_after
