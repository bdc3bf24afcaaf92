"""Server side of DeviceID's TPM 2.0 attestation (docs/HARDWARE-ID.md): a Privacy CA that
enrols a device's per-app attestation key (AK), and the app server's verifier of per-app evidence.

Enrolment (device ↔ PrivacyCA), once per app id::

    request  = device: app id + EK certificate + that app's AK public area   (deviceid.enrolment-request)
    challenge = ca.challenge(request)   # EK chain checked, MakeCredential to the EK for the AK Name
    response = device: TPM2_ActivateCredential(AK, EK)           (deviceid.enrolment-response)
    ak_cert  = ca.finish(response)      # deviceid.ak-certificate, naming the AK and the app id

Attestation (device ↔ app server)::

    verifier = Verifier([ca.certificate])
    nonce = verifier.new_nonce()        # sent to the device
    evidence = device: TPM2_Certify(app key, the app's AK, qualifyingData=nonce)   (deviceid.attestation)
    result = verifier.verify(evidence, nonce, app_id="com.example.app")
    result.hardware_id                  # recomputed from the certified Name

App Attest for Linux (WebAuthn, device ↔ app server): registration once, then an assertion
per request::

    webauthn = WebAuthnVerifier([ca.certificate])
    challenge = webauthn.new_challenge()  # the app puts it into its client data
    attestation = device: deviceid attest webauthn APP --client-data-hash …   (deviceid.webauthn-attestation)
    credential = webauthn.register(attestation, client_data_json)   # any WebAuthn library accepts it too
    assertion = device: deviceid assert APP --client-data-hash …    (deviceid.webauthn-assertion)
    credential = webauthn.verify_assertion(assertion, client_data_json, credential)  # keep the new counter

Every failure is a Rejected whose `reason` is a stable code (REASONS lists them all).
`python3 -m deviceid_verifier` is a command line over both, keeping its state in files, and
`python3 -m deviceid_verifier serve` the HTTP service of both on a shared database.

State
-----
Nonces, pending challenges, issued certificates, revocations and the enrolment limit live in a
Store (docs/SERVER-STATE.md): MemoryStore by default (one process), SQLiteStore (one file, the
workers of one host) or PostgresStore (workers on many hosts); open_store(url) opens one.

The AK
------
One AK per app id and TPM: the primary of the OWNER hierarchy (TPM2_RH_OWNER) of the template
ECC P-256, objectAttributes 0x00050472 (restricted signing key), ECDSA/SHA-256, symmetric and kdf
NULL, empty authPolicy, unique.x = SHA-256(len32("deviceid.attestation-key.v1") ‖
"deviceid.attestation-key.v1" ‖ len32(app id) ‖ app id) (attestation_key_unique), unique.y empty.
The enrolment request carries the app id; the CA certifies the AK with two subjectAltName URIs,
AK_NAME_URI_PREFIX + the AK's Name in hex and APP_ID_URI_PREFIX + the percent-encoded app id.
The verifier requires the AK certificate's app id to be the evidence's (and the caller's), and
TPMS_ATTEST.qualifiedSigner to be the AK as an owner-hierarchy primary.

Modes
-----
**Privacy-CA mode** (the default design): a CA the deployment chooses runs PrivacyCA with the
TPM manufacturers' EK roots as `ek_trust_anchors`; app servers get only the CA's certificate
and never see the EK certificate, a global identifier of the TPM.

**Direct mode**: an app server runs PrivacyCA itself, with the manufacturers' EK roots, and
passes its own CA certificate to its Verifier. It then sees every device's EK certificate, so
all servers doing so can link one device across apps. Choose it only when that is acceptable.

What the evidence does not hide or prove
----------------------------------------
- Across apps: each app has its own AK (derived in the TPM from the storage primary seed and
  the app id), so servers of different apps see unrelated AK keys, AK certificates and hardware
  IDs, and cannot link one device through them. The Privacy CA can: it sees the EK certificate
  with every app's enrolment, hence which AKs (and app ids) belong to one TPM.
- TPMS_ATTEST: since the AK is outside the endorsement and platform hierarchies, the TPM
  obfuscates resetCount, restartCount and firmwareVersion (offsets them by a secret value of
  the owner hierarchy and the AK's Name), so they do not link apps. clockInfo.clock and
  clockInfo.safe are NOT obfuscated: clock counts the milliseconds the TPM has been powered
  since its last TPM2_Clear, so two apps' servers that compare clock values with their own
  receive times can link a device with some confidence.
- The app id is bound to the AK by the CA's AK certificate only, not by any TPM structure (a
  created key's unique is its public point, and the CA cannot check what the device put in the
  template). So a device may enrol several AKs for one app with the CA, and a device can create
  app keys of any unique, so it can present many valid hardware IDs for one app. The CA's store
  rate-limits enrolments per TPM (its EKs proven together) and app id, and counts them (risk). The app server should
  compare the hardware ID with the one enrolled for the app and user (see Verifier.verify).
- It proves that the app key lives in a TPM whose EK chains to a trusted root, not that the
  operating system is honest.

DeviceCheck for Linux
---------------------
A tenant (a developer account owning app ids, `tenant add`) gets in every verification of its
apps' devices a "device" object: three bits it wrote of the device's TPM, the month each last
changed, how active the device was in the last hour, and a token to write the bits with
(PrivacyCA.device_check). The bits survive every reset short of a new endorsement seed. Its
verifications also carry a risk receipt (PrivacyCA.risk_receipt, refresh_receipt), a JWS any
JOSE library verifies with the CA certificate (verify_receipt does it here).

Wire format v1: JSON in UTF-8, "v": 1 and a "type"; binary fields in standard base64 with
padding; TPM structures in TPM marshalled form without their outer TPM2B size. Unknown "v" is
rejected; unknown extra keys are ignored. An app id is a string of 1 to 255 UTF-8 bytes without
control characters.
"""

from ._ca import APP_ID_URI_PREFIX, AK_NAME_URI_PREFIX, TCG_KP_AIK_CERTIFICATE, CAPrivateKey, PrivacyCA, app_id_uri
from ._chain import ChainError, verify_chain
from ._credential import kdfa, make_credential
from ._errors import REASONS, Rejected
from ._store import Ban, Tenant, IssueLimit, DeviceBits, CertificateRecord, CredentialRecord, Limit, Limited, MemoryStore, NonceState, PendingChallenge, Store, open_store
from ._store._postgres import PostgresStore
from ._store._sql import StoreUnavailable
from ._store._sqlite import SQLiteStore
from ._tpm import (
    AK_ATTRIBUTES, APP_KEY_ATTRIBUTES, app_key_unique, attestation_key_unique, credential_key_unique, ecc_public,
    hardware_id_from_name, name_of,
)
from ._verify import Attestation, Verifier
from ._webauthn import WebAuthnCredential, WebAuthnVerifier
from ._devicecheck import DeviceAnswer, DeviceCheck
from ._receipt import verify as verify_receipt

__all__ = [
    "PrivacyCA", "Verifier", "Attestation", "Rejected", "REASONS", "CAPrivateKey",
    "WebAuthnVerifier", "WebAuthnCredential",
    "hardware_id_from_name", "app_key_unique", "attestation_key_unique", "credential_key_unique", "name_of",
    "ecc_public",
    "APP_KEY_ATTRIBUTES", "AK_ATTRIBUTES", "AK_NAME_URI_PREFIX", "APP_ID_URI_PREFIX", "app_id_uri",
    "TCG_KP_AIK_CERTIFICATE",
    "make_credential", "kdfa", "verify_chain", "ChainError",
    "Store", "MemoryStore", "SQLiteStore", "PostgresStore", "open_store", "StoreUnavailable", "NonceState",
    "PendingChallenge", "CertificateRecord", "CredentialRecord", "Limit", "Limited", "Ban", "Tenant", "IssueLimit",
    "DeviceBits", "DeviceCheck", "DeviceAnswer", "verify_receipt",
]
