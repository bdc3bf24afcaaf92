"""Runs in the venv test_webauthn.py makes (PyPI's fido2 and webauthn, never DeviceID's code):
reads one case as JSON on stdin and prints each verifier's verdict on it as JSON.

  {"kind": "registration", "attestation_object", "client_data_json", "challenge", "rp_id", "origin",
   "root_pem"}                                      (binary fields base64url without padding)
  → {"fido2": {"ok": true, "credential_id", "public_key", "counter"} | {"ok": false, "error"},
     "py_webauthn": {...the same...}}
  {"kind": "assertion", "public_key" (COSE, base64url), "authenticator_data", "client_data_hash",
   "signature", "rp_id"}
  → {"fido2": {"ok": true, "counter", "flags"} | {"ok": false, "error"}}

The verifiers are used as an app server would use them: python-fido2's TpmAttestation with the
chain checked up to the Privacy CA's certificate, and py_webauthn's verify_registration_response
with that certificate as the "tpm" root (require_user_presence=False: DeviceID asks no person).
swtpm's manufacturer id, id:00001014, is added to py_webauthn's table of TPM vendors, which lacks it.
"""
import base64
import hashlib
import json
import sys


def unb64(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def verdict(call):
    try:
        return {"ok": True, **call()}
    except Exception as e:  # a verifier's rejection, whatever it raises
        return {"ok": False, "error": f"{type(e).__name__}: {e}"}


def fido2_registration(case):
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from fido2 import cbor
    from fido2.attestation import TpmAttestation, verify_x509_chain
    from fido2.webauthn import AttestationObject, CollectedClientData

    def check():
        client_data = CollectedClientData(unb64(case["client_data_json"]))
        if client_data.type != "webauthn.create" or client_data.challenge != unb64(case["challenge"]) \
                or client_data.origin != case["origin"]:
            raise ValueError("the client data is not this registration's")
        attestation = AttestationObject(unb64(case["attestation_object"]))
        if attestation.fmt != "tpm":
            raise ValueError(f"format {attestation.fmt}")
        auth_data = attestation.auth_data
        if auth_data.rp_id_hash != hashlib.sha256(case["rp_id"].encode()).digest():
            raise ValueError("rpIdHash is not the relying party's")
        result = TpmAttestation().verify(attestation.att_stmt, auth_data, client_data.hash)
        root = x509.load_pem_x509_certificate(case["root_pem"].encode())
        verify_x509_chain(result.trust_path + [root.public_bytes(serialization.Encoding.DER)])
        credential = auth_data.credential_data
        return {"credential_id": b64(credential.credential_id), "public_key": b64(cbor.encode(credential.public_key)),
                "counter": auth_data.counter, "flags": auth_data.flags}

    return verdict(check)


def py_webauthn_registration(case):
    from webauthn import verify_registration_response
    from webauthn.helpers.structs import AttestationFormat
    from webauthn.helpers.tpm import structs as tpm_structs

    tpm_structs.TPM_MANUFACTURERS["id:00001014"] = tpm_structs.TPMManufacturerInfo(name="swtpm", id="IBM")

    def check():
        attestation_object = unb64(case["attestation_object"])
        from webauthn.helpers import parse_attestation_object
        credential_id = parse_attestation_object(attestation_object).auth_data.attested_credential_data.credential_id
        verified = verify_registration_response(
            credential={"id": b64(credential_id), "rawId": b64(credential_id), "type": "public-key",
                        "response": {"clientDataJSON": case["client_data_json"],
                                     "attestationObject": case["attestation_object"]}},
            expected_challenge=unb64(case["challenge"]), expected_rp_id=case["rp_id"],
            expected_origin=case["origin"], require_user_presence=False,
            pem_root_certs_bytes_by_fmt={AttestationFormat.TPM: [case["root_pem"].encode()]})
        return {"credential_id": b64(verified.credential_id), "public_key": b64(verified.credential_public_key),
                "counter": verified.sign_count}

    return verdict(check)


def fido2_assertion(case):
    from fido2 import cbor
    from fido2.cose import CoseKey
    from fido2.webauthn import AuthenticatorData

    def check():
        auth_data = AuthenticatorData(unb64(case["authenticator_data"]))
        if auth_data.rp_id_hash != hashlib.sha256(case["rp_id"].encode()).digest():
            raise ValueError("rpIdHash is not the relying party's")
        key = CoseKey.parse(cbor.decode(unb64(case["public_key"])))
        key.verify(bytes(auth_data) + unb64(case["client_data_hash"]), unb64(case["signature"]))
        return {"counter": auth_data.counter, "flags": auth_data.flags}

    return verdict(check)


def main():
    case = json.load(sys.stdin)
    if case["kind"] == "registration":
        out = {"fido2": fido2_registration(case), "py_webauthn": py_webauthn_registration(case)}
    else:
        out = {"fido2": fido2_assertion(case)}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
