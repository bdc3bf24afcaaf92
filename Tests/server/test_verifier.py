"""deviceid_verifier against real TPM 2.0 behaviour: swtpm machines driven by tpm2-tools
(tools_device.py), each app's AK enrolled with a PrivacyCA, attesting app keys to a Verifier.
Every rejection test names the exact Rejected.reason."""
import datetime
import hashlib
import json
import os
import stat
import struct
import subprocess
import warnings
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID

import tools_device
from deviceid_verifier import (
    REASONS, AK_NAME_URI_PREFIX, APP_ID_URI_PREFIX, TCG_KP_AIK_CERTIFICATE, Attestation, PrivacyCA, Rejected,
    Verifier, ChainError, app_id_uri, app_key_unique, attestation_key_unique, hardware_id_from_name, kdfa,
    make_credential, verify_chain,
)
from deviceid_verifier import MemoryStore, NonceState, WebAuthnVerifier
from deviceid_verifier._credential import aes_cfb_encrypt
from deviceid_verifier._tpm import parse_certify_attest
from tools_device import DeviceError, b64, unb64
from verifier_command import cli, cli_rejection

APP_A = "com.example.a"  # both enrolled by the enrolled_a fixture (machine_fixtures.ENROLLED_APPS)
APP_B = "com.example.b"


def rejected(reason, call, *args, **kwargs):
    """Run call(*args, **kwargs); it must raise Rejected with exactly `reason`."""
    assert reason in REASONS
    with pytest.raises(Rejected) as raised:
        call(*args, **kwargs)
    assert raised.value.reason == reason, f"expected {reason}, got {raised.value.reason}: {raised.value.message}"
    return raised.value


def edit(message: str, **changes) -> str:
    parsed = json.loads(message)
    parsed.update(changes)
    return json.dumps(parsed)


def edit_bytes(message: str, key: str, change) -> str:
    return edit(message, **{key: b64(change(unb64(json.loads(message)[key])))})


def flip(offset: int):
    def change(data: bytes) -> bytes:
        data = bytearray(data)
        data[offset] ^= 0x01
        return bytes(data)
    return change


@pytest.fixture(scope="module")
def verifier(ca):
    return Verifier([ca.certificate])


def tpms_attest_certify(signer_qualified_name: bytes, extra: bytes, name: bytes, qualified_name: bytes) -> bytes:
    def tpm2b(data: bytes) -> bytes:
        return struct.pack(">H", len(data)) + data
    return (struct.pack(">IH", 0xFF544347, 0x8017) + tpm2b(signer_qualified_name) + tpm2b(extra)
            + struct.pack(">QIIB", 1234, 1, 0, 1) + struct.pack(">Q", 0x2019102300163636) + tpm2b(name)
            + tpm2b(qualified_name))


def qualified(hierarchy: int, name: bytes) -> bytes:
    return b"\x00\x0b" + hashlib.sha256(struct.pack(">I", hierarchy) + name).digest()


def san_uris(certificate: x509.Certificate):
    return certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.UniformResourceIdentifier)


def bare_ak_certificate(ca_key, ca_certificate, ak_key, uris=()) -> bytes:
    """An AK certificate (DER) from a trusted CA's key, with only the AIK usage and `uris`."""
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    builder = (
        x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ak")]))
        .issuer_name(ca_certificate.subject).public_key(ak_key).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([TCG_KP_AIK_CERTIFICATE]), critical=False)
    )
    if uris:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.UniformResourceIdentifier(u) for u in uris]), critical=False)
    return builder.sign(ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.DER)


def software_ecc_public(key: ec.EllipticCurvePrivateKey, attributes: int) -> bytes:
    numbers = key.public_key().public_numbers()
    return (struct.pack(">HHIHHHHHH", 0x0023, 0x000B, attributes, 0, 0x0010, 0x0018, 0x000B, 0x0003, 0x0010)
            + b"\x00\x20" + numbers.x.to_bytes(32, "big") + b"\x00\x20" + numbers.y.to_bytes(32, "big"))


def tpm_signature(key: ec.EllipticCurvePrivateKey, data: bytes) -> bytes:
    r, s = decode_dss_signature(key.sign(data, ec.ECDSA(hashes.SHA256())))
    return struct.pack(">HHH", 0x0018, 0x000B, 32) + r.to_bytes(32, "big") + struct.pack(">H", 32) + s.to_bytes(32, "big")


# -- the credential's cipher ------------------------------------------------------------------

def test_aes_cfb_is_nist_sp_800_38a_f_3_13():
    """CFB128-AES128.Encrypt, SP 800-38A Appendix F.3.13, and a cut last block (its prefix)."""
    key, iv = bytes.fromhex("2b7e151628aed2a6abf7158809cf4f3c"), bytes(range(16))
    plain = bytes.fromhex("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
                          "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710")
    cipher = bytes.fromhex("3b3fd92eb72dad20333449f8e83cfb4ac8a64537a0b3a93fcde3cdad9f1ce58b"
                           "26751f67a3cbb140b1808cf187a4f4dfc04b05357c5d1c0eeac4c66f9ff7f2e6")
    assert aes_cfb_encrypt(key, iv, plain) == cipher
    assert aes_cfb_encrypt(key, iv, plain[:34]) == cipher[:34]
    assert aes_cfb_encrypt(key, iv, b"") == b""


def test_a_privacy_ca_challenge_uses_no_deprecated_mode(request_a, ca, monkeypatch):
    """0.3.0's challenge went through cryptography's CFB mode, deprecated in cryptography 47 (a
    CryptographyDeprecationWarning on every enrolment). Debian's cryptography 38 does not warn, so
    the mode itself is made to fail here; and no warning of any kind is let through."""
    from cryptography.hazmat.primitives.ciphers import modes

    def deprecated(*_):
        raise AssertionError("cryptography's CFB mode is deprecated (moved to decrepit in 47)")
    monkeypatch.setattr(modes, "CFB", deprecated)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ca.challenge(json.dumps(request_a))


# -- the derivation, on the TPM ---------------------------------------------------------------

def test_app_key_unique_is_the_documented_hash():
    label = b"deviceid.hardware-id.v1"
    expected = hashlib.sha256(struct.pack(">I", len(label)) + label + struct.pack(">I", 13) + b"com.example.a").digest()
    assert app_key_unique(APP_A) == expected == tools_device.app_unique(APP_A)


def test_attestation_key_unique_is_the_documented_hash():
    label = b"deviceid.attestation-key.v1"
    expected = hashlib.sha256(struct.pack(">I", len(label)) + label + struct.pack(">I", 13) + b"com.example.a").digest()
    assert attestation_key_unique(APP_A) == expected == tools_device.ak_unique(APP_A)
    assert attestation_key_unique(APP_B) != expected


def test_hardware_id_is_a_uuidv8_of_the_name():
    name = b"\x00\x0b" + bytes(range(32))
    hid = hardware_id_from_name(name)
    assert hid == tools_device.hardware_id(name)
    assert hid[14] == "8" and hid[19] in "89ab" and hid == hid.lower() and len(hid) == 36


def test_app_key_name_is_stable_and_differs_per_app_id(machine_a):
    device = machine_a.device
    first = device.read_public(device.create_app_key(APP_A, "stable-1.ctx"))
    second = device.read_public(device.create_app_key(APP_A, "stable-2.ctx"))
    other = device.read_public(device.create_app_key(APP_B, "stable-3.ctx"))
    assert first == second
    assert first[1] != other[1]
    public, name = first
    assert name == b"\x00\x0b" + hashlib.sha256(public).digest()
    # the -u file was read as intended: the created key's template is the frozen one
    assert public[:20] == struct.pack(">HHIHHHHHH", 0x23, 0xB, 0x00040472, 0, 0x10, 0x18, 0xB, 3, 0x10)
    # and ESAPI's create_primary with the template built field by field gives the same key
    esapi_public = device.certify(APP_A, os.urandom(32))[0]
    assert esapi_public == public


# -- enrolment and the happy path ------------------------------------------------------------

def test_enrol_then_attest(enrolled_a, verifier, ca):
    device = enrolled_a.device
    certificate = x509.load_der_x509_certificate(device.ak_certificates[APP_A])
    assert certificate.issuer == ca.certificate.subject
    nonce = verifier.new_nonce()
    assert isinstance(nonce, bytes) and len(nonce) == 32
    result = verifier.verify(device.evidence(APP_A, nonce), nonce, app_id=APP_A)
    assert isinstance(result, Attestation)
    independent_name = device.app_name(APP_A)  # tpm2_readpublic -n
    assert result.app_name == independent_name
    assert result.hardware_id == hardware_id_from_name(independent_name) == tools_device.hardware_id(independent_name)
    assert result.app_id == APP_A
    ak_name = device.ak_name(APP_A)  # tpm2_readpublic -n of the owner-hierarchy AK of APP_A
    assert result.ak_name == ak_name
    assert san_uris(certificate) == [AK_NAME_URI_PREFIX + ak_name.hex(), APP_ID_URI_PREFIX + APP_A]
    assert TCG_KP_AIK_CERTIFICATE in certificate.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    # the certified app key verifies the app's own TPM signatures later
    assert isinstance(result.app_public_key, ec.EllipticCurvePublicKey)
    with pytest.raises(AttributeError):
        result.hardware_id = "x"  # frozen


def test_same_app_twice_gives_the_same_hardware_id(enrolled_a, verifier):
    ids = set()
    for _ in range(2):
        nonce = verifier.new_nonce()
        ids.add(verifier.verify(enrolled_a.device.evidence(APP_A, nonce), nonce).hardware_id)
    assert len(ids) == 1


def test_two_apps_give_two_hardware_ids(enrolled_a, verifier):
    nonce_a, nonce_b = verifier.new_nonce(), verifier.new_nonce()
    a = verifier.verify(enrolled_a.device.evidence(APP_A, nonce_a), nonce_a, app_id=APP_A)
    b = verifier.verify(enrolled_a.device.evidence(APP_B, nonce_b), nonce_b, app_id=APP_B)
    assert a.hardware_id != b.hardware_id
    assert a.ak_name != b.ak_name  # one AK per app: nothing in the evidence links the two apps


def test_a_second_machine_gives_another_hardware_id(enrolled_a, machine_b, ca, verifier):
    machine_b.device.enrol(ca, APP_A)
    nonce_a, nonce_b = verifier.new_nonce(), verifier.new_nonce()
    a = verifier.verify(enrolled_a.device.evidence(APP_A, nonce_a), nonce_a, app_id=APP_A)
    b = verifier.verify(machine_b.device.evidence(APP_A, nonce_b), nonce_b, app_id=APP_A)
    assert a.hardware_id != b.hardware_id
    assert b.hardware_id == hardware_id_from_name(machine_b.device.app_name(APP_A))
    assert a.ak_name != b.ak_name


# -- one AK per app ---------------------------------------------------------------------------

def test_two_apps_have_their_own_aks_and_ak_certificates(enrolled_a, verifier):
    device = enrolled_a.device
    apps = (APP_A, APP_B)
    certificates = {app: x509.load_der_x509_certificate(device.ak_certificates[app]) for app in apps}
    names = {app: device.ak_name(app) for app in apps}
    assert names[APP_A] != names[APP_B]
    assert certificates[APP_A].public_key().public_numbers() != certificates[APP_B].public_key().public_numbers()
    for app in apps:
        assert san_uris(certificates[app]) == [AK_NAME_URI_PREFIX + names[app].hex(), APP_ID_URI_PREFIX + app]
        nonce = verifier.new_nonce()
        result = verifier.verify(device.evidence(app, nonce), nonce, app_id=app)
        assert (result.app_id, result.ak_name, result.ak_certificate) == (app, names[app], certificates[app])
    # the AK is a restricted ECDSA P-256 key of the frozen template shape
    public = device.read_public(device.create_ak(APP_A))[0]
    assert public[:20] == struct.pack(">HHIHHHHHH", 0x23, 0xB, 0x00050472, 0, 0x10, 0x18, 0xB, 3, 0x10)


def test_evidence_for_app_b_signed_with_app_as_ak(enrolled_a, verifier):
    """App B's key, certified by app A's AK and sent with A's AK certificate, claiming app B."""
    device = enrolled_a.device
    for expected in (None, APP_B):
        nonce = verifier.new_nonce()
        evidence = device.evidence(APP_B, nonce, ak_app_id=APP_A)
        assert json.loads(evidence)["app_id"] == APP_B
        assert unb64(json.loads(evidence)["ak_certificate"]) == device.ak_certificates[APP_A]
        rejected("app-id-mismatch", verifier.verify, evidence, nonce, app_id=expected)
    # B's evidence with A's AK certificate (for another key, and another app)
    nonce = verifier.new_nonce()
    evidence = edit(device.evidence(APP_B, nonce), ak_certificate=b64(device.ak_certificates[APP_A]))
    rejected("app-id-mismatch", verifier.verify, evidence, nonce)


def test_the_app_key_is_bound_to_the_app_id_by_the_device_alone(enrolled_a, verifier):
    """What the package documents it cannot check: A's AK certifying B's app key, sent as A's
    evidence, verifies, with the hardware ID of B's key (so a server compares it with the one
    it enrolled)."""
    device = enrolled_a.device
    nonce = verifier.new_nonce()
    evidence = edit(device.evidence(APP_B, nonce, ak_app_id=APP_A), app_id=APP_A)
    result = verifier.verify(evidence, nonce, app_id=APP_A)
    assert result.app_id == APP_A
    assert result.hardware_id == hardware_id_from_name(device.app_name(APP_B))
    assert result.hardware_id != hardware_id_from_name(device.app_name(APP_A))


def test_ak_of_the_endorsement_hierarchy(machine_a, ca, verifier):
    """An AK of the same template made in the endorsement hierarchy: the CA cannot tell (same
    public area shape; ActivateCredential works) and certifies it, but TPMS_ATTEST.qualifiedSigner
    shows it, and such an AK's attestations are not obfuscated."""
    app = "com.example.endorsement-ak"
    device = machine_a.device
    device.enrol(ca, app, ak_hierarchy="ENDORSEMENT")
    nonce = verifier.new_nonce()
    error = rejected("ak-hierarchy", verifier.verify, device.evidence(app, nonce, ak_hierarchy="ENDORSEMENT"), nonce,
                     app_id=app)
    assert "endorsement hierarchy" in error.message
    # the app's owner-hierarchy AK is another key than the certified one
    nonce = verifier.new_nonce()
    rejected("ak-mismatch", verifier.verify, device.evidence(app, nonce), nonce, app_id=app)


def test_counters_are_obfuscated_but_not_the_clock(machine_a):
    """TPM2_Certify by an owner-hierarchy AK: resetCount, restartCount and firmwareVersion are
    offset by a value of the AK's own (constant for one AK, different across AKs); clock and
    safe are the TPM's."""
    device = machine_a.device

    def attest(app_id, **options):
        return parse_certify_attest(device.certify(app_id, os.urandom(32), **options)[2])

    real = device.firmware_version()
    endorsement = attest(APP_A, ak_hierarchy="ENDORSEMENT")
    a, b, a_again = attest(APP_A), attest(APP_B), attest(APP_A)
    assert endorsement.firmware_version == real
    assert len({real, a.firmware_version, b.firmware_version}) == 3
    assert len({(x.reset_count, x.restart_count) for x in (endorsement, a, b)}) == 3
    assert (a_again.firmware_version, a_again.reset_count, a_again.restart_count) == (
        a.firmware_version, a.reset_count, a.restart_count)
    assert endorsement.clock <= a.clock <= b.clock <= a_again.clock < endorsement.clock + 60_000
    assert endorsement.safe == a.safe == b.safe


@pytest.fixture(scope="module")
def request_a(machine_a):
    return json.loads(machine_a.device.enrolment_request(APP_A))


@pytest.mark.parametrize("app_id", [
    None, 5, ["com.example.a"], "", "x" * 256, "é" * 128, "a\x00b", "a\nb", "a\x1fb", "a\x7fb", "a\x85b", "\ud800",
])
def test_an_enrolment_request_needs_a_valid_app_id(request_a, ca, app_id):
    request = dict(request_a)
    if app_id is None:
        del request["app_id"]
    else:
        request["app_id"] = app_id
    rejected("malformed", ca.challenge, json.dumps(request))


def test_an_app_id_outside_the_unreserved_characters(machine_a, ca, verifier):
    device = machine_a.device
    odd, longest = "org.example/ü %x~", "é" * 127 + "x"  # the longest: 255 bytes
    assert len(longest.encode()) == 255
    for app in (odd, longest):
        device.enrol(ca, app)
        nonce = verifier.new_nonce()
        result = verifier.verify(device.evidence(app, nonce), nonce, app_id=app)
        assert result.app_id == app
        assert result.hardware_id == hardware_id_from_name(device.app_name(app))
    uri = san_uris(x509.load_der_x509_certificate(device.ak_certificates[odd]))[1]
    assert uri == "urn:deviceid:app-id:org.example%2F%C3%BC%20%25x~" == app_id_uri(odd)


def test_pending_challenges_and_nonces_move_between_processes(enrolled_a, verifier, ca, new_ca_certificate,
                                                             swtpm_localca):
    device = enrolled_a.device
    key, certificate = new_ca_certificate("deviceid two-process CA")
    first = PrivacyCA(key, certificate, swtpm_localca)
    challenge = first.challenge(device.enrolment_request(APP_A))
    state = first.export_pending()
    assert json.loads(state)["pending"][json.loads(challenge)["id"]]["app_id"] == APP_A
    second = PrivacyCA(key, certificate, [])
    second.import_pending(state)
    response = device.enrolment_response(challenge)
    answer = second.finish(response)
    issued = x509.load_der_x509_certificate(unb64(json.loads(answer)["certificate"]))
    assert san_uris(issued)[1] == APP_ID_URI_PREFIX + APP_A
    assert second.finish(response) == answer  # the same response again is a retry: the same certificate
    assert json.loads(second.export_pending())["pending"] == {}
    for bad in ("", "{}", '{"v":1,"type":"deviceid.ca-pending","pending":[]}',
                '{"v":1,"type":"deviceid.ca-pending","pending":{"x":{"secret":"AA=="}}}', verifier.export_nonces()):
        with pytest.raises(ValueError):
            second.import_pending(bad)

    fresh, spent = verifier.new_nonce(), verifier.new_nonce()
    rejected("malformed", verifier.verify, "[]", spent)  # spends nothing
    verifier.verify(device.evidence(APP_A, spent), spent)
    other = Verifier([ca.certificate])
    other.import_nonces(verifier.export_nonces())
    assert other.verify(device.evidence(APP_A, fresh), fresh, app_id=APP_A).app_id == APP_A
    rejected("nonce-replayed", other.verify, device.evidence(APP_A, spent), spent)
    with pytest.raises(ValueError):
        other.import_nonces(second.export_pending())


# -- nonces -----------------------------------------------------------------------------------

def test_replayed_evidence(enrolled_a, verifier):
    nonce = verifier.new_nonce()
    evidence = enrolled_a.device.evidence(APP_A, nonce)
    verifier.verify(evidence, nonce)
    rejected("nonce-replayed", verifier.verify, evidence, nonce)


def test_a_failed_attempt_spends_nothing(enrolled_a, verifier):
    """Issue 51, case 10: whoever saw a nonce could spend it with junk, and the device's genuine
    evidence was then nonce-replayed. Evidence that fails a check spends nothing."""
    nonce = verifier.new_nonce()
    evidence = enrolled_a.device.evidence(APP_A, nonce)
    rejected("version", verifier.verify, edit(evidence, v=2), nonce)
    rejected("signature", verifier.verify, edit(evidence, signature=b64(b"\x00\x00\x00\x00")), nonce)
    rejected("app-id-mismatch", verifier.verify, evidence, nonce, app_id=APP_B)
    assert verifier.verify(evidence, nonce).app_id == APP_A
    rejected("nonce-replayed", verifier.verify, evidence, nonce)


def test_a_nonce_serves_its_purpose_and_its_app(enrolled_a, ca):
    """Issue 51, case 10: one pool served every purpose, tied to no app: a WebAuthn challenge
    passed as an attestation nonce (and the reverse). Now a nonce is spent only by evidence of
    its purpose and, when it was issued for one, its app id; a mismatch spends nothing."""
    store = MemoryStore()
    verifier, webauthn = Verifier([ca.certificate], store=store), WebAuthnVerifier([ca.certificate], store=store)
    device = enrolled_a.device
    challenge = webauthn.new_challenge()
    rejected("nonce-unknown", verifier.verify, device.evidence(APP_A, challenge), challenge)
    assert store.use_nonce(challenge, datetime.datetime.utcnow(), "webauthn", APP_A) is NonceState.FRESH  # unspent
    bound = verifier.new_nonce(APP_B)
    rejected("nonce-unknown", verifier.verify, device.evidence(APP_A, bound), bound)
    assert verifier.verify(device.evidence(APP_B, bound), bound).app_id == APP_B
    rejected("nonce-replayed", verifier.verify, device.evidence(APP_B, bound), bound)


def test_an_ek_has_at_most_ten_challenges_pending(machine_a, make_ca):
    """Issue 51, case 5: a saved enrolment request (the EK certificate is public) replayed at
    190 challenges/s, each costing the CA an RSA-OAEP, under no limit. Now an EK has at most
    PENDING_PER_EK challenges pending, whatever app ids they name."""
    ca = make_ca("deviceid pending-bound CA")
    device = machine_a.device
    challenges = [ca.challenge(device.enrolment_request(APP_A if i % 2 else APP_B)) for i in range(10)]
    refused = rejected("rate-limited", ca.challenge, device.enrolment_request("com.example.other"))
    assert 290 <= refused.retry_after <= 300  # when the oldest of the ten expires
    device.enrolment_request(APP_A)  # the device answers for the AK of its last request: APP_A's again
    ca.finish(device.enrolment_response(challenges[-1]))  # a finished challenge is no longer pending
    ca.challenge(device.enrolment_request(APP_A))
    rejected("rate-limited", ca.challenge, device.enrolment_request(APP_A))


def test_evidence_for_another_nonce(enrolled_a, verifier):
    old, current = verifier.new_nonce(), verifier.new_nonce()
    evidence = enrolled_a.device.evidence(APP_A, old)
    rejected("nonce-mismatch", verifier.verify, evidence, current)


def test_a_nonce_this_verifier_never_issued(enrolled_a, verifier):
    nonce = os.urandom(32)
    rejected("nonce-unknown", verifier.verify, enrolled_a.device.evidence(APP_A, nonce), nonce)


def test_a_nonce_of_another_verifier(enrolled_a, verifier, ca):
    other = Verifier([ca.certificate])
    nonce = other.new_nonce()
    rejected("nonce-unknown", verifier.verify, enrolled_a.device.evidence(APP_A, nonce), nonce)


def test_expired_nonce(enrolled_a, ca):
    short = Verifier([ca.certificate], nonce_lifetime=datetime.timedelta(microseconds=1))
    nonce = short.new_nonce()
    evidence = enrolled_a.device.evidence(APP_A, nonce)
    rejected("nonce-expired", short.verify, evidence, nonce)
    rejected("nonce-replayed", short.verify, evidence, nonce)  # used up, as use_nonce leaves an expired one


def test_claimed_nonce_is_not_the_certified_one(enrolled_a, verifier):
    certified, claimed = verifier.new_nonce(), verifier.new_nonce()
    evidence = edit(enrolled_a.device.evidence(APP_A, certified), nonce=b64(claimed))
    rejected("nonce-mismatch", verifier.verify, evidence, claimed)


def test_the_evidence_nonce_field_must_be_the_nonce_too(enrolled_a, verifier):
    nonce = verifier.new_nonce()
    evidence = edit(enrolled_a.device.evidence(APP_A, nonce), nonce=b64(os.urandom(32)))
    rejected("nonce-mismatch", verifier.verify, evidence, nonce)


def test_tpm2_certify_of_tools_5_4_fixes_its_qualifying_data(enrolled_a, verifier):
    """tpm2_certify (tpm2-tools 5.4) has no -q: its extraData is always 00ff55aa, never the nonce."""
    device = enrolled_a.device
    attest, signature = device.certify_with_tools(APP_A)
    assert attest[8 + 34:8 + 34 + 2 + 4] == b"\x00\x04\x00\xff\x55\xaa"
    nonce = verifier.new_nonce()
    honest = device.evidence(APP_A, verifier.new_nonce())
    rejected("nonce-mismatch", verifier.verify,
             edit(honest, nonce=b64(nonce), attest=b64(attest), signature=b64(signature)), nonce)


# -- another app's key, tampering -------------------------------------------------------------

def test_another_apps_key_claiming_app_a(enrolled_a, verifier):
    device = enrolled_a.device
    id_a = hardware_id_from_name(device.app_name(APP_A))
    # B's key, certified by B's AK, whose certificate names B
    nonce = verifier.new_nonce()
    evidence = edit(device.evidence(APP_B, nonce), app_id=APP_A, hardware_id=id_a)
    rejected("app-id-mismatch", verifier.verify, evidence, nonce, app_id=APP_A)
    # B's key, certified by A's AK: the claimed hardware ID is not the certified key's
    nonce = verifier.new_nonce()
    evidence = edit(device.evidence(APP_B, nonce, ak_app_id=APP_A), app_id=APP_A, hardware_id=id_a)
    rejected("hardware-id-mismatch", verifier.verify, evidence, nonce, app_id=APP_A)


def test_app_public_of_another_key_than_the_certified_one(enrolled_a, verifier):
    device = enrolled_a.device
    nonce = verifier.new_nonce()
    app_a_public = json.loads(device.evidence(APP_A, verifier.new_nonce()))["app_public"]
    evidence = edit(device.evidence(APP_B, nonce), app_public=app_a_public)
    rejected("app-key-mismatch", verifier.verify, evidence, nonce)


def test_evidence_for_another_app_id_than_expected(enrolled_a, verifier):
    nonce = verifier.new_nonce()
    rejected("app-id-mismatch", verifier.verify, enrolled_a.device.evidence(APP_B, nonce), nonce, app_id=APP_A)


@pytest.mark.parametrize("offset", [0, 6, 50, -1])
def test_a_tampered_byte_in_attest(enrolled_a, verifier, offset):
    nonce = verifier.new_nonce()
    evidence = edit_bytes(enrolled_a.device.evidence(APP_A, nonce), "attest", flip(offset))
    rejected("signature", verifier.verify, evidence, nonce)


def test_a_tampered_signature(enrolled_a, verifier):
    nonce = verifier.new_nonce()
    evidence = edit_bytes(enrolled_a.device.evidence(APP_A, nonce), "signature", flip(10))
    rejected("signature", verifier.verify, evidence, nonce)


def test_a_key_of_another_template(enrolled_a, verifier):
    """A TPM key certified honestly, but without noDA: not the frozen app key template."""
    nonce = verifier.new_nonce()
    evidence = enrolled_a.device.evidence(APP_A, nonce, app_attributes=0x00040072)
    rejected("app-key-template", verifier.verify, evidence, nonce)


def test_ak_certificate_for_another_key(enrolled_a, machine_b, new_ca_certificate):
    """An AK certificate from a trusted CA that names an app id but no AK Name: its key alone
    must match ak_public."""
    key, ca_certificate = new_ca_certificate("deviceid bare CA")
    device = enrolled_a.device
    ak_of_a = x509.load_der_x509_certificate(device.ak_certificates[APP_A]).public_key()
    bare = bare_ak_certificate(key, ca_certificate, ak_of_a, [app_id_uri(APP_A)])
    verifier = Verifier([ca_certificate])
    nonce = verifier.new_nonce()
    good = edit(device.evidence(APP_A, nonce), ak_certificate=b64(bare))
    assert verifier.verify(good, nonce).app_id == APP_A
    other_ak = json.loads(machine_b.device.evidence(APP_A, os.urandom(32)))["ak_public"]
    nonce = verifier.new_nonce()
    bad = edit(device.evidence(APP_A, nonce), ak_public=other_ak, ak_certificate=b64(bare))
    rejected("ak-mismatch", verifier.verify, bad, nonce)


@pytest.mark.parametrize("uris", [
    [],  # no subjectAltName at all
    ["urn:deviceid:other:x"],
    [app_id_uri(APP_A), app_id_uri(APP_A)],  # two, even equal
    [app_id_uri(APP_A), app_id_uri(APP_B)],
    [APP_ID_URI_PREFIX],  # empty app id
    [APP_ID_URI_PREFIX + "com%2Eexample.a"],  # an unreserved character percent-encoded: not canonical
    [APP_ID_URI_PREFIX + "com.example%2fa"],  # lowercase hex: not canonical
    [APP_ID_URI_PREFIX + "com.example.%ZZ"],
    [APP_ID_URI_PREFIX + "com.example.%FF"],  # not UTF-8
    [APP_ID_URI_PREFIX + "a%01b"],  # a control character
    [APP_ID_URI_PREFIX + "x" * 256],
])
def test_ak_certificate_without_one_valid_app_id(enrolled_a, new_ca_certificate, uris):
    key, ca_certificate = new_ca_certificate("deviceid bare CA")
    device = enrolled_a.device
    ak_of_a = x509.load_der_x509_certificate(device.ak_certificates[APP_A]).public_key()
    verifier = Verifier([ca_certificate])
    nonce = verifier.new_nonce()
    certificate = bare_ak_certificate(key, ca_certificate, ak_of_a, uris)
    evidence = edit(device.evidence(APP_A, nonce), ak_certificate=b64(certificate))
    rejected("ak-app-id-missing", verifier.verify, evidence, nonce)


def test_app_key_of_another_hierarchy(enrolled_a, verifier):
    """The app key template as an endorsement-hierarchy primary: a TPM key, honestly certified,
    but not the owner-hierarchy key the hardware ID is defined by."""
    nonce = verifier.new_nonce()
    evidence = enrolled_a.device.evidence(APP_A, nonce, app_hierarchy="ENDORSEMENT")
    rejected("app-key-mismatch", verifier.verify, evidence, nonce)


def test_a_quote_is_not_a_certification(enrolled_a, verifier):
    """A TPM2_Quote by the real AK over the right nonce is TPM-generated, but not TPM_ST_ATTEST_CERTIFY."""
    device = enrolled_a.device
    nonce = verifier.new_nonce()
    attest, signature = device.quote(APP_A, nonce)
    evidence = edit(device.evidence(APP_A, verifier.new_nonce()), nonce=b64(nonce), attest=b64(attest),
                    signature=b64(signature))
    rejected("wrong-type", verifier.verify, evidence, nonce)


def test_data_the_ak_signed_is_not_tpm_generated(enrolled_a, verifier):
    """The AK signs external data only after TPM2_Hash vouches it does not start with
    TPM_GENERATED_VALUE: such a signature verifies, but what it signs is no TPMS_ATTEST."""
    device = enrolled_a.device
    nonce = verifier.new_nonce()
    honest = json.loads(device.evidence(APP_A, verifier.new_nonce()))
    forged = b"\xff\x54\x43\x46" + unb64(honest["attest"])[4:]  # one bit from the magic
    evidence = edit(json.dumps(honest), nonce=b64(nonce), attest=b64(forged),
                    signature=b64(device.sign_with_ak(APP_A, forged)))
    rejected("not-tpm-generated", verifier.verify, evidence, nonce)
    with pytest.raises(DeviceError):  # with the magic, the TPM gives no ticket and the AK refuses
        device.sign_with_ak(APP_A, unb64(honest["attest"]))


def test_ak_public_of_another_machine(enrolled_a, machine_b, ca, verifier):
    nonce = verifier.new_nonce()
    other_ak = json.loads(machine_b.device.evidence(APP_A, verifier.new_nonce()))["ak_public"]
    evidence = edit(enrolled_a.device.evidence(APP_A, nonce), ak_public=other_ak)
    rejected("ak-mismatch", verifier.verify, evidence, nonce)


# -- software keys ----------------------------------------------------------------------------

def test_software_ak_cannot_be_activated(machine_a, make_ca):
    """A software key in the AK template's shape: the CA issues the challenge (it cannot tell),
    but the TPM activates it neither with its real AK nor with the key loaded as a public area."""
    ca = make_ca("deviceid software-AK CA")
    device = machine_a.device
    software = ec.generate_private_key(ec.SECP256R1())
    software_public = software_ecc_public(software, 0x00050472)
    challenge = ca.challenge(device.enrolment_request(APP_A, ak_public=software_public))
    with pytest.raises(DeviceError) as real_ak:
        device.enrolment_response(challenge)
    assert "integrity check failed" in real_ak.value.stderr  # TPM_RC_INTEGRITY: another Name
    device.load_external(software_public, "software.ctx")
    with pytest.raises(DeviceError) as external:
        device.enrolment_response(challenge, activate_context="software.ctx")
    assert "authValue or authPolicy is not available" in external.value.stderr  # TPM_RC_AUTH_UNAVAILABLE
    guess = json.dumps({"v": 1, "type": "deviceid.enrolment-response", "id": json.loads(challenge)["id"],
                        "credential": b64(os.urandom(32))})
    rejected("credential", ca.finish, guess)
    rejected("credential", ca.finish, guess)  # a wrong answer spends nothing: the challenge waits for the TPM's


def test_software_key_with_a_self_made_ak_certificate(enrolled_a, verifier):
    """Evidence made entirely in software, structurally perfect, with a self-signed AK certificate."""
    ak, app = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ak_public, app_public = software_ecc_public(ak, 0x00050472), software_ecc_public(app, 0x00040472)
    ak_name = b"\x00\x0b" + hashlib.sha256(ak_public).digest()
    app_name = b"\x00\x0b" + hashlib.sha256(app_public).digest()
    nonce = verifier.new_nonce()
    attest = tpms_attest_certify(qualified(0x40000001, ak_name), nonce, app_name, qualified(0x40000001, app_name))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "deviceid attestation key")])
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    certificate = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(ak.public_key())
        .serial_number(1).not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([TCG_KP_AIK_CERTIFICATE]), critical=False)
        .add_extension(x509.SubjectAlternativeName([x509.UniformResourceIdentifier(AK_NAME_URI_PREFIX + ak_name.hex()),
                                                    x509.UniformResourceIdentifier(app_id_uri(APP_A))]),
                       critical=False)
        .sign(ak, hashes.SHA256())
    )
    evidence = json.dumps({
        "v": 1, "type": "deviceid.attestation", "app_id": APP_A, "hardware_id": hardware_id_from_name(app_name),
        "nonce": b64(nonce), "app_public": b64(app_public), "ak_public": b64(ak_public), "attest": b64(attest),
        "signature": b64(tpm_signature(ak, attest)),
        "ak_certificate": b64(certificate.public_bytes(serialization.Encoding.DER)),
    })
    rejected("ak-untrusted", verifier.verify, evidence, nonce)
    # the same evidence passes every other check: only the AK certificate's trust rejects it
    trusting = Verifier([certificate])
    nonce2 = trusting.new_nonce()
    attest2 = tpms_attest_certify(qualified(0x40000001, ak_name), nonce2, app_name, qualified(0x40000001, app_name))
    evidence2 = edit(evidence, nonce=b64(nonce2), attest=b64(attest2), signature=b64(tpm_signature(ak, attest2)))
    # (a trust anchor is trusted as itself, so pinning this certificate accepts the forgery: the
    # CA's enrolment is the only thing that separates a TPM from software)
    assert trusting.verify(evidence2, nonce2).hardware_id == hardware_id_from_name(app_name)
    # and with it, the checks of TPMS_ATTEST's fields that a TPM would never fail
    for wrong, reason in [
        (dict(signer=qualified(0x4000000B, ak_name)), "ak-hierarchy"),
        (dict(signer=qualified(0x4000000C, ak_name)), "ak-hierarchy"),
        (dict(signer=ak_name), "ak-hierarchy"),
        (dict(qualified_name=qualified(0x4000000B, app_name)), "app-key-mismatch"),
        (dict(name=b"\x00\x0b" + bytes(32)), "app-key-mismatch"),
    ]:
        fields = dict(signer=qualified(0x40000001, ak_name), name=app_name, qualified_name=qualified(0x40000001, app_name))
        fields.update(wrong)
        n = trusting.new_nonce()
        forged = tpms_attest_certify(fields["signer"], n, fields["name"], fields["qualified_name"])
        rejected(reason, trusting.verify, edit(evidence, nonce=b64(n), attest=b64(forged),
                                               signature=b64(tpm_signature(ak, forged))), n)


def test_evidence_without_ak_certificate(enrolled_a, verifier):
    nonce = verifier.new_nonce()
    parsed = json.loads(enrolled_a.device.evidence(APP_A, nonce))
    del parsed["ak_certificate"]
    rejected("ak-untrusted", verifier.verify, json.dumps(parsed), nonce)


# -- trust ------------------------------------------------------------------------------------

def test_ak_certificate_of_an_untrusted_ca(machine_b, make_ca, ca):
    """A CA of the same name as the trusted one, but another key: the name matches, the signature does not."""
    other_ca = make_ca(ca.certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value)
    assert other_ca.certificate.subject == ca.certificate.subject
    device = machine_b.device
    device.enrol(other_ca, APP_A)
    try:
        verifier = Verifier([ca.certificate])
        nonce = verifier.new_nonce()
        rejected("ak-untrusted", verifier.verify, device.evidence(APP_A, nonce), nonce)
        trusting = Verifier([other_ca.certificate])
        nonce = trusting.new_nonce()
        assert trusting.verify(device.evidence(APP_A, nonce), nonce).hardware_id
    finally:
        device.enrol(ca, APP_A)


def test_ek_of_an_untrusted_root(machine_a, make_ca, new_ca_certificate):
    _, stranger = new_ca_certificate("some TPM manufacturer")
    untrusting = make_ca("deviceid picky CA", ek_trust_anchors=[stranger])
    rejected("ek-untrusted", untrusting.challenge, machine_a.device.enrolment_request(APP_A))


def test_ek_root_only_with_the_issuer_as_intermediate(machine_a, make_ca, swtpm_localca):
    root = [c for c in swtpm_localca if c.subject == c.issuer]
    issuer = [c for c in swtpm_localca if c.subject != c.issuer]
    assert root and issuer, "swtpm's local CA has a root and an issuer certificate"
    without = make_ca("deviceid root-only CA", ek_trust_anchors=root)
    rejected("ek-untrusted", without.challenge, machine_a.device.enrolment_request(APP_A))
    with_intermediate = make_ca("deviceid root+intermediate CA", ek_trust_anchors=root, ek_intermediates=issuer)
    device = machine_a.device
    answer = json.loads(with_intermediate.finish(device.enrolment_response(
        with_intermediate.challenge(device.enrolment_request(APP_A)))))
    assert answer["type"] == "deviceid.ak-certificate"
    assert x509.load_der_x509_certificate(unb64(answer["certificate"])).issuer == with_intermediate.certificate.subject


def test_ecc_ek_certificate_is_not_the_rsa_ek(machine_a, ca):
    """A P-384 certificate offered as the RSA EK (L-1) is refused; offered without a kind (a
    device that predates ek_kind), its key makes it H-3 (test_endorsement.py enrols with it)."""
    device = machine_a.device
    ecc = b64(device.ek_certificate(tools_device.EK_CERT_ECC))
    rejected("ek-mismatch", ca.challenge, edit(device.enrolment_request(APP_A), ek_kind="L-1", ek_certificate=ecc))
    rejected("ek-mismatch", ca.challenge, edit(device.enrolment_request(APP_A), ek_kind="H-5"))
    challenge = json.loads(ca.challenge(edit(device.enrolment_request(APP_A), ek_certificate=ecc)))
    assert challenge["ek_kind"] == "H-3"


def test_ak_public_not_of_the_ak_template(machine_a, ca):
    device = machine_a.device
    app_public = device.read_public(device.create_app_key(APP_A))[0]  # unrestricted
    rejected("ak-template", ca.challenge, device.enrolment_request(APP_A, ak_public=app_public))


# -- the enrolment protocol -------------------------------------------------------------------

def test_challenge_ids_are_single_use(machine_a, make_ca):
    ca = make_ca("deviceid single-use CA")
    device = machine_a.device
    response = device.enrolment_response(ca.challenge(device.enrolment_request(APP_A)))
    answer = ca.finish(response)
    assert ca.finish(response) == answer  # a retry of the same response: the same certificate, counted once
    serial = x509.load_der_x509_certificate(unb64(json.loads(answer)["certificate"])).serial_number
    assert ca.risk(serial) == 1
    rejected("challenge-unknown", ca.finish, edit(response, credential=b64(os.urandom(32))))
    rejected("challenge-unknown", ca.finish, edit(response, id=os.urandom(16).hex()))


def test_expired_challenge(machine_a, make_ca):
    ca = make_ca("deviceid impatient CA", challenge_lifetime=datetime.timedelta(microseconds=1))
    device = machine_a.device
    response = device.enrolment_response(ca.challenge(device.enrolment_request(APP_A)))
    rejected("challenge-unknown", ca.finish, response)


def test_make_credential_matches_the_tpm(machine_a):
    """The CA's MakeCredential, with a fixed seed, is what the TPM activates (checked end to end
    above) and its KDFa is SP 800-108 counter mode as tpm2-pytss implements it."""
    from tpm2_pytss.internal.crypto import _kdfa
    from tpm2_pytss.constants import TPM2_ALG
    seed, name = os.urandom(32), b"\x00\x0b" + os.urandom(32)
    assert kdfa(seed, b"STORAGE", name, b"", 128) == _kdfa(TPM2_ALG.SHA256, seed, b"STORAGE", name, b"", 128)
    assert kdfa(seed, b"INTEGRITY", b"", b"", 256) == _kdfa(TPM2_ALG.SHA256, seed, b"INTEGRITY", b"", b"", 256)
    ek = x509.load_der_x509_certificate(machine_a.device.ek_certificate()).public_key()
    credential = make_credential(ek, b"s" * 32, name, seed=seed)
    assert len(credential.credential_blob) == 2 + 32 + 2 + 32 and len(credential.encrypted_secret) == 256


# -- the wire format --------------------------------------------------------------------------

def test_unknown_version(enrolled_a, verifier, ca):
    nonce = verifier.new_nonce()
    evidence = enrolled_a.device.evidence(APP_A, nonce)
    rejected("version", verifier.verify, edit(evidence, v=2), nonce)
    request = enrolled_a.device.enrolment_request(APP_A)
    for version in (2, 0, "1", True, None):
        rejected("version", ca.challenge, edit(request, v=version))


def test_unknown_keys_are_ignored(enrolled_a, verifier):
    nonce = verifier.new_nonce()
    assert verifier.verify(edit(enrolled_a.device.evidence(APP_A, nonce), future_field=[1, 2]), nonce)


@pytest.mark.parametrize("change, reason", [
    (lambda e: edit(e, attest="!" + json.loads(e)["attest"]), "malformed"),
    (lambda e: edit(e, signature="AAE"), "malformed"),  # no padding
    (lambda e: edit(e, app_public=None), "malformed"),
    (lambda e: edit(e, hardware_id=5), "malformed"),
    (lambda e: e[:-1], "malformed"),
    (lambda e: "[]", "malformed"),
    (lambda e: e[:-1] + ',"v":1}', "malformed"),  # a duplicate key
    (lambda e: edit(e, type="deviceid.enrolment-request"), "message-type"),
    (lambda e: edit_bytes(e, "signature", lambda s: s + b"\0"), "malformed"),
    (lambda e: edit_bytes(e, "app_public", lambda p: p + b"\0"), "malformed"),
])
def test_malformed_evidence(enrolled_a, verifier, change, reason):
    nonce = verifier.new_nonce()
    rejected(reason, verifier.verify, change(enrolled_a.device.evidence(APP_A, nonce)), nonce)


def test_evidence_as_bytes(enrolled_a, verifier):
    nonce = verifier.new_nonce()
    assert verifier.verify(enrolled_a.device.evidence(APP_A, nonce).encode(), nonce).app_id == APP_A


def test_privacy_ca_checks_its_key(new_ca_certificate):
    key, certificate = new_ca_certificate("one")
    other_key, _ = new_ca_certificate("two")
    with pytest.raises(ValueError):
        PrivacyCA(other_key, certificate, [])
    assert PrivacyCA(key, certificate, []).certificate == certificate


def test_every_reason_is_documented():
    with pytest.raises(ValueError):
        Rejected("no-such-reason", "x")
    assert all(REASONS.values())


# -- X.509 paths (verify_chain on its own) ---------------------------------------------------

def _certificate(subject, issuer_name, issuer_key, public_key, *, ca, path_length=None, days=(-1, 1), extra=()):
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    builder = (
        x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer_name)])).public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now + datetime.timedelta(days=days[0])).not_valid_after(now + datetime.timedelta(days=days[1]))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=path_length if ca else None), critical=True)
    )
    for extension, critical in extra:
        builder = builder.add_extension(extension, critical=critical)
    return builder.sign(issuer_key, hashes.SHA256())


@pytest.fixture(scope="module")
def pki():
    keys = {n: ec.generate_private_key(ec.SECP256R1()) for n in ("root", "mid", "leaf", "stranger")}
    root = _certificate("root", "root", keys["root"], keys["root"].public_key(), ca=True)
    mid = _certificate("mid", "root", keys["root"], keys["mid"].public_key(), ca=True, path_length=0)
    leaf = _certificate("leaf", "mid", keys["mid"], keys["leaf"].public_key(), ca=False)
    return keys, root, mid, leaf


def test_chain_through_an_intermediate(pki):
    keys, root, mid, leaf = pki
    assert verify_chain(leaf, [root], [mid]) == [leaf, mid, root]
    with pytest.raises(ChainError, match="not a trusted or known CA"):
        verify_chain(leaf, [root])


def test_chain_signature_by_another_key_of_the_same_name(pki):
    keys, root, mid, leaf = pki
    impostor = _certificate("mid", "root", keys["stranger"], keys["mid"].public_key(), ca=True)
    with pytest.raises(ChainError, match="signature does not verify"):
        verify_chain(leaf, [root], [impostor])


def test_chain_issuer_that_is_no_ca(pki):
    keys, root, mid, leaf = pki
    not_ca = _certificate("mid", "root", keys["root"], keys["mid"].public_key(), ca=False)
    with pytest.raises(ChainError, match="not a CA"):
        verify_chain(leaf, [root], [not_ca])


def test_chain_path_length(pki):
    keys, root, mid, leaf = pki
    below = _certificate("below", "mid", keys["mid"], keys["stranger"].public_key(), ca=True)
    deep = _certificate("deep", "below", keys["stranger"], keys["leaf"].public_key(), ca=False)
    with pytest.raises(ChainError, match="pathLenConstraint"):
        verify_chain(deep, [root], [mid, below])


def test_chain_validity(pki):
    keys, root, mid, leaf = pki
    with pytest.raises(ChainError, match="not valid at"):
        verify_chain(leaf, [root], [mid], at=datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) + datetime.timedelta(days=2))
    expired = _certificate("leaf", "mid", keys["mid"], keys["leaf"].public_key(), ca=False, days=(-3, -2))
    with pytest.raises(ChainError, match="not valid at"):
        verify_chain(expired, [root], [mid])


def test_chain_unknown_critical_extension(pki):
    keys, root, mid, leaf = pki
    odd = _certificate("leaf", "mid", keys["mid"], keys["leaf"].public_key(), ca=False, extra=[
        (x509.UnrecognizedExtension(x509.ObjectIdentifier("1.3.6.1.4.1.99999.1"), b"\x05\x00"), True)])
    with pytest.raises(ChainError, match="unsupported critical extension"):
        verify_chain(odd, [root], [mid])


def test_swtpm_ek_certificate_chain(machine_a, swtpm_localca):
    """swtpm's EK certificate, with its critical subjectAltName, chains to the local CA."""
    ek = x509.load_der_x509_certificate(machine_a.device.ek_certificate())
    critical = {e.oid for e in ek.extensions if e.critical}
    assert x509.oid.ExtensionOID.SUBJECT_ALTERNATIVE_NAME in critical
    path = verify_chain(ek, swtpm_localca)
    assert path[0] == ek and path[-1] in swtpm_localca


# -- the command line (python3 -m deviceid_verifier) ---------------------------------------------

def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_command_line_enrols_and_verifies(machine_a, swtpm_localca, tmp_path):
    app = "com.example.cli"
    device = machine_a.device
    key, certificate = tmp_path / "ca.key", tmp_path / "ca.pem"
    made = cli("new-ca", "--key", key, "--cert", certificate, "--name", "deviceid CLI CA")
    assert made.returncode == 0, made.stderr
    assert mode(key) == 0o600
    assert x509.load_pem_x509_certificate(certificate.read_bytes()).subject.rfc4514_string() == "CN=deviceid CLI CA"
    roots = tmp_path / "ek-roots.pem"  # several certificates in one PEM file
    roots.write_bytes(b"".join(c.public_bytes(serialization.Encoding.PEM) for c in swtpm_localca))

    pending = tmp_path / "pending.json"
    ca_args = ["--ca-key", key, "--ca-cert", certificate, "--state", pending]
    challenge = cli("challenge", *ca_args, "--ek-anchor", roots, input=device.enrolment_request(app))
    assert challenge.returncode == 0, challenge.stderr
    challenge_id = json.loads(challenge.stdout)["id"]
    assert mode(pending) == 0o600
    assert json.loads(pending.read_text())["pending"][challenge_id]["app_id"] == app
    response = device.enrolment_response(challenge.stdout)
    finished = cli("finish", *ca_args, input=response)
    assert finished.returncode == 0, finished.stderr
    device.accept_ak_certificate(finished.stdout, app)
    assert json.loads(pending.read_text())["pending"] == {}
    assert cli_rejection(cli("finish", *ca_args, input=response)) == "challenge-unknown"

    nonces = tmp_path / "nonces.json"
    issued = cli("nonce", "--state", nonces)
    assert issued.returncode == 0, issued.stderr
    nonce = unb64(issued.stdout.strip())
    assert len(nonce) == 32 and mode(nonces) == 0o600
    evidence = device.evidence(app, nonce)
    verify = ["verify", "--ca-cert", certificate, "--state", nonces]
    verified = cli(*verify, "--app-id", app, input=evidence)
    assert verified.returncode == 0, verified.stderr
    assert json.loads(verified.stdout) == {"hardware_id": hardware_id_from_name(device.app_name(app)), "app_id": app}
    assert cli_rejection(cli(*verify, input=evidence)) == "nonce-replayed"
    nonce = unb64(cli("nonce", "--state", nonces).stdout.strip())
    assert cli_rejection(cli(*verify, "--app-id", APP_A, input=device.evidence(app, nonce))) == "app-id-mismatch"
    assert cli(*verify, input=device.evidence(app, nonce)).returncode == 0  # the rejection spent nothing


def test_command_line_errors(tmp_path):
    key, certificate = tmp_path / "ca.key", tmp_path / "ca.pem"
    assert cli("new-ca", "--key", key, "--cert", certificate, "--name", "deviceid CLI CA").returncode == 0
    again = cli("new-ca", "--key", key, "--cert", tmp_path / "other.pem", "--name", "x")
    assert again.returncode == 2 and "exists" in again.stderr and not (tmp_path / "other.pem").exists()
    other_key = tmp_path / "other.key"
    assert cli("new-ca", "--key", other_key, "--cert", tmp_path / "other.pem", "--name", "other").returncode == 0

    nonces = tmp_path / "nonces.json"
    nonces.write_text("")
    nonces.chmod(0o644)
    assert cli("nonce", "--state", nonces).returncode == 0 and mode(nonces) == 0o600
    verify = ["verify", "--ca-cert", certificate, "--state", nonces]
    assert cli_rejection(cli(*verify, input="not json")) == "malformed"
    stranger = json.dumps({"v": 1, "type": "deviceid.attestation", "nonce": b64(os.urandom(32))})
    assert cli_rejection(cli(*verify, input=stranger)) == "malformed"  # checked before its nonce
    nonces.write_text("garbage")
    for broken in (cli("nonce", "--state", nonces), cli(*verify, input=stranger)):
        assert broken.returncode == 2 and "nonce state" in broken.stderr, broken.stderr

    pending = tmp_path / "pending.json"
    request = json.dumps({"v": 1, "type": "deviceid.enrolment-request", "ek_certificate": "", "ak_public": ""})
    assert cli_rejection(cli("challenge", "--ca-key", key, "--ca-cert", certificate, "--state", pending,
                             "--ek-anchor", certificate, input=request)) == "malformed"  # no app id
    mismatched = cli("finish", "--ca-key", other_key, "--ca-cert", certificate, "--state", pending, input="{}")
    assert mismatched.returncode == 2 and "not the key of the CA certificate" in mismatched.stderr
    assert cli("verify").returncode == 2  # usage


@pytest.mark.parametrize("args, words", [
    (["nonce", "--lifetime", "nan"], "--lifetime must be 0.001 to 31622400, not nan"),
    (["nonce", "--lifetime", "1e300"], "--lifetime must be 0.001 to 31622400"),
    (["nonce", "--lifetime", "inf"], "--lifetime must be 0.001 to 31622400"),
    (["nonce", "--lifetime", "0"], "--lifetime must be 0.001 to 31622400"),
    (["nonce", "--lifetime", "soon"], "--lifetime must be a number, not 'soon'"),
    (["new-ca", "--name", "x", "--days", "100000000"], "--days must be 1 to 36500"),
    (["new-ca", "--name", "x", "--days", "-5"], "--days must be 1 to 36500"),
])
def test_a_number_out_of_range_is_a_usage_error_not_a_traceback(tmp_path, args, words):
    """0.3.0: ValueError or OverflowError tracebacks, exit 1 (issue 33)."""
    files = ["--state", tmp_path / "n.json"] if args[0] == "nonce" else \
        ["--key", tmp_path / "k.pem", "--cert", tmp_path / "c.pem"]
    result = cli(*args, *files)
    assert result.returncode == 2 and words in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert list(tmp_path.iterdir()) == [], "nothing written"


def test_a_state_time_before_year_one_in_utc_is_malformed(tmp_path):
    # 0001-01-01T00:00:00+01:00 is 0000-12-31T23:00 UTC: 0.3.0 raised OverflowError from load().
    from deviceid_verifier._ca import parse_utc
    rejected("malformed", parse_utc, "0001-01-01T00:00:00+01:00")
    nonces = tmp_path / "nonces.json"
    assert cli("nonce", "--state", nonces).returncode == 0
    state = json.loads(nonces.read_text())
    for entry in state["nonces"].values():
        entry["expires"] = "0001-01-01T00:00:00+01:00"
    nonces.write_text(json.dumps(state))
    broken = cli("nonce", "--state", nonces)
    assert broken.returncode == 2 and "outside the years 1 to 9999" in broken.stderr, broken.stderr


def test_the_tools_device_leaves_nothing_loaded(machine_a, machine_b):
    """swtpm has no resource manager: after every test above, no transient object or session is left."""
    for machine in (machine_a, machine_b):
        env = dict(os.environ, TPM2TOOLS_TCTI=machine.tpm.tcti)
        for kind in ("handles-transient", "handles-loaded-session", "handles-saved-session"):
            out = subprocess.run(["tpm2_getcap", kind], env=env, capture_output=True, text=True, timeout=60, check=True)
            assert out.stdout.strip() == "", (kind, out.stdout)
