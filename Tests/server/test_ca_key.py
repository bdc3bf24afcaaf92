"""The CA key as production keeps it (issue 51, "Run as production runs it": the CA key only as an
unencrypted PEM): an encrypted PKCS #8 key, its passphrase from a file or the environment and
never on the command line, or a key in a PKCS #11 token (SoftHSM2, a real token's module), signing
AK certificates and CRLs through the service and the commands."""
import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from verifier_command import cli, environment

APP = "com.example.ca-key"
PASSPHRASE = "correct horse battery staple 51"


def signed_by(certificate: x509.Certificate, ca_pem: Path) -> bool:
    """True if the CA certificate in `ca_pem` signed `certificate` (ECDSA P-256 with SHA-256)."""
    ca = x509.load_pem_x509_certificate(ca_pem.read_bytes())
    ca.public_key().verify(certificate.signature, certificate.tbs_certificate_bytes, ec.ECDSA(hashes.SHA256()))
    return certificate.issuer == ca.subject


def ak_certificate(message: str) -> x509.Certificate:
    parsed = json.loads(message)
    assert parsed["type"] == "deviceid.ak-certificate", message
    return x509.load_der_x509_certificate(base64.b64decode(parsed["certificate"]))


@pytest.fixture(scope="module")
def encrypted_ca(tmp_path_factory):
    """(key, certificate, passphrase file) of a CA that `new-ca` made with an encrypted key."""
    directory = tmp_path_factory.mktemp("encrypted-ca")
    secret = directory / "passphrase"
    secret.write_text(PASSPHRASE + "\n")
    key, cert = directory / "ca.key", directory / "ca.pem"
    made = cli("new-ca", "--key", key, "--cert", cert, "--name", "encrypted CA", "--ca-key-passphrase-file", secret)
    assert made.returncode == 0, made.stderr
    return key, cert, secret


def test_new_ca_writes_an_encrypted_pkcs8_key_that_openssl_opens_with_the_passphrase(encrypted_ca):
    key, cert, secret = encrypted_ca
    assert key.read_text().startswith("-----BEGIN ENCRYPTED PRIVATE KEY-----\n")
    assert PASSPHRASE.encode() not in key.read_bytes()
    assert key.stat().st_mode & 0o777 == 0o600
    opened = subprocess.run(["openssl", "pkey", "-in", str(key), "-passin", f"file:{secret}", "-pubout"],
                            capture_output=True, text=True)
    assert opened.returncode == 0, opened.stderr
    public = x509.load_pem_x509_certificate(cert.read_bytes()).public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    assert opened.stdout == public


def test_the_passphrase_comes_from_the_environment_too(tmp_path):
    key, cert = tmp_path / "ca.key", tmp_path / "ca.pem"
    made = subprocess.run([sys.executable, "-m", "deviceid_verifier", "new-ca", "--key", str(key), "--cert", str(cert),
                           "--name", "env CA"], capture_output=True, text=True,
                          env=dict(environment(), DEVICEID_CA_KEY_PASSPHRASE=PASSPHRASE))
    assert made.returncode == 0, made.stderr
    loaded = serialization.load_pem_private_key(key.read_bytes(), password=PASSPHRASE.encode())
    assert isinstance(loaded, ec.EllipticCurvePrivateKey)


def test_an_encrypted_key_without_its_right_passphrase_is_a_usage_error(encrypted_ca, ek_anchors, tmp_path):
    key, cert, secret = encrypted_ca
    wrong = tmp_path / "wrong"
    wrong.write_text("not it\n")
    state = tmp_path / "state.json"
    common = ["challenge", "--ca-key", key, "--ca-cert", cert, "--state", state, "--ek-anchor", ek_anchors[0]]
    missing = cli(*common, input="{}")
    assert (missing.returncode, missing.stdout) == (2, ""), missing
    assert f"{key} is encrypted: give its passphrase with --ca-key-passphrase-file FILE" in missing.stderr
    mistaken = cli(*common, "--ca-key-passphrase-file", wrong, input="{}")
    assert (mistaken.returncode, mistaken.stdout) == (2, ""), mistaken
    assert "or the passphrase is not its passphrase" in mistaken.stderr
    both = subprocess.run([sys.executable, "-m", "deviceid_verifier", *map(str, common), "--ca-key-passphrase-file",
                           str(secret)], input="{}", capture_output=True, text=True,
                          env=dict(environment(), DEVICEID_CA_KEY_PASSPHRASE=PASSPHRASE))
    assert both.returncode == 2 and "give one" in both.stderr, both
    assert not state.exists()


def test_challenge_and_finish_sign_with_an_encrypted_key(machine_a, encrypted_ca, ek_anchors, tmp_path):
    key, cert, secret = encrypted_ca
    state = tmp_path / "state.json"
    unlock = ["--ca-key", key, "--ca-cert", cert, "--ca-key-passphrase-file", secret, "--state", state]
    challenge = cli("challenge", *unlock, *[a for anchor in ek_anchors for a in ("--ek-anchor", anchor)],
                    input=machine_a.device.enrolment_request(APP))
    assert challenge.returncode == 0, challenge.stderr
    finished = cli("finish", *unlock, input=machine_a.device.enrolment_response(challenge.stdout))
    assert finished.returncode == 0, finished.stderr
    assert signed_by(ak_certificate(finished.stdout), cert)


def test_serve_enrols_with_an_encrypted_key_whose_passphrase_no_argv_shows(machine_a, encrypted_ca, ek_anchors,
                                                                           tmp_path, monkeypatch, services):
    """Through the service, with the passphrase in the environment: the AK certificate verifies
    against the CA certificate, and no process of the service carries the passphrase in its
    command line (/proc/PID/cmdline, what `ps` shows every user)."""
    key, cert, _ = encrypted_ca
    monkeypatch.setenv("DEVICEID_CA_KEY_PASSPHRASE", PASSPHRASE)
    service = services(f"sqlite:///{tmp_path}/ca.sqlite3", 1, workers=2, ca=(str(key), str(cert)))[0]
    status, _, challenge = service.post("/v1/enrolment/challenge", machine_a.device.enrolment_request(APP))
    assert status == 200, challenge
    status, _, finished = service.post("/v1/enrolment/finish",
                                       machine_a.device.enrolment_response(challenge.decode()))
    assert status == 200, finished
    assert signed_by(ak_certificate(finished.decode()), cert)

    master, *workers = service.processes()
    assert len(workers) == 2
    assert str(key).encode() in Path(f"/proc/{master}/cmdline").read_bytes()  # the service's own argv
    for pid in (master, *workers):
        assert PASSPHRASE.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()


def test_the_crl_command_signs_with_an_encrypted_key(encrypted_ca, tmp_path):
    key, cert, secret = encrypted_ca
    crl = cli("crl", "--database", f"sqlite:///{tmp_path}/ca.sqlite3", "--ca-key", key, "--ca-cert", cert,
              "--ca-key-passphrase-file", secret, "--der", text=False)
    assert crl.returncode == 0, crl.stderr
    ca = x509.load_pem_x509_certificate(cert.read_bytes())
    assert x509.load_der_x509_crl(crl.stdout).is_signature_valid(ca.public_key())


# -- a key in a PKCS #11 token ------------------------------------------------------------------

SOFTHSM = "/usr/lib/softhsm/libsofthsm2.so"
#: What /proc/PID/maps shows of it once loaded (the path above is a symbolic link).
SOFTHSM_MAPPED = "/libsofthsm2.so"
PIN = "pin-of-issue-51"


@pytest.fixture(scope="module")
def token(tmp_path_factory):
    """(URI, certificate, PIN file, SOFTHSM2_CONF) of a CA whose key is in a new SoftHSM2 token
    only: new-ca's key, imported into it with softhsm2-util, then deleted."""
    directory = tmp_path_factory.mktemp("token")
    (directory / "tokens").mkdir()
    conf = directory / "softhsm2.conf"
    conf.write_text(f"directories.tokendir = {directory / 'tokens'}\nobjectstore.backend = file\nlog.level = ERROR\n")
    env = dict(environment(), SOFTHSM2_CONF=str(conf))
    key, cert = directory / "ca.key", directory / "ca.pem"
    assert cli("new-ca", "--key", key, "--cert", cert, "--name", "token CA").returncode == 0
    for step in (["--init-token", "--free", "--label", "deviceid-ca", "--pin", PIN, "--so-pin", "so-pin-51"],
                 ["--import", str(key), "--token", "deviceid-ca", "--label", "ca key", "--id", "51", "--pin", PIN]):
        done = subprocess.run(["softhsm2-util", *step], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
    key.unlink()
    pin = directory / "pin"
    pin.write_text(PIN + "\n")
    return f"pkcs11:token=deviceid-ca;object=ca%20key;type=private?module-path={SOFTHSM}", cert, pin, conf


def test_serve_signs_ak_certificates_and_crls_with_a_key_in_a_token(machine_a, token, tmp_path, monkeypatch,
                                                                    services):
    uri, cert, pin, conf = token
    monkeypatch.setenv("SOFTHSM2_CONF", str(conf))
    pseudonym_key = tmp_path / "pseudonym.key"
    pseudonym_key.write_bytes(bytes(range(32)))
    service = services(f"sqlite:///{tmp_path}/ca.sqlite3", 1, workers=2, ca=(uri, str(cert)),
                       extra=["--ca-key-passphrase-file", str(pin), "--pseudonym-key", str(pseudonym_key)])[0]
    master, *workers = service.processes()
    # no PKCS #11 state crossed gunicorn's fork: serve checked the key, then unloaded the module
    assert [pid for pid in (master, *workers) if SOFTHSM_MAPPED in Path(f"/proc/{pid}/maps").read_text()] == []
    certificates = []
    for app_id in (APP, APP + ".second"):
        status, _, challenge = service.post("/v1/enrolment/challenge", machine_a.device.enrolment_request(app_id))
        assert status == 200, challenge
        status, _, finished = service.post("/v1/enrolment/finish",
                                           machine_a.device.enrolment_response(challenge.decode()))
        assert status == 200, finished
        certificates.append(ak_certificate(finished.decode()))
    assert all(signed_by(certificate, cert) for certificate in certificates)
    status, _, crl = service.get("/v1/crl")
    assert status == 200
    ca = x509.load_pem_x509_certificate(cert.read_bytes())
    assert x509.load_der_x509_crl(crl).is_signature_valid(ca.public_key())
    for pid in (master, *workers):
        assert PIN.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()
    # the workers that signed opened the token themselves; the master never holds it
    assert SOFTHSM_MAPPED not in Path(f"/proc/{master}/maps").read_text()
    assert any(SOFTHSM_MAPPED in Path(f"/proc/{pid}/maps").read_text() for pid in workers)


def test_the_crl_command_signs_with_a_key_in_a_token(token, tmp_path):
    uri, cert, pin, conf = token
    crl = subprocess.run([sys.executable, "-m", "deviceid_verifier", "crl", "--database",
                          f"sqlite:///{tmp_path}/ca.sqlite3", "--ca-key", uri, "--ca-cert", str(cert), "--der"],
                         capture_output=True, env=dict(environment(), SOFTHSM2_CONF=str(conf),
                                                       DEVICEID_CA_KEY_PASSPHRASE=PIN))
    assert crl.returncode == 0, crl.stderr
    verified = subprocess.run(["openssl", "crl", "-inform", "DER", "-CAfile", str(cert), "-noout", "-verify"],
                              input=crl.stdout, capture_output=True)
    assert verified.returncode == 0 and b"verify OK" in verified.stderr, verified


def test_a_key_in_a_token_is_checked_before_anything_listens(token, ek_anchors, encrypted_ca, tmp_path):
    """Each is a usage error (exit 2) saying what is wrong, before any worker starts."""
    uri, cert, pin, conf = token
    wrong_pin = tmp_path / "wrong-pin"
    wrong_pin.write_text("not-the-pin\n")

    def serve(*options, ca_cert=cert):
        return subprocess.run([sys.executable, "-m", "deviceid_verifier", "serve", "--database",
                               f"sqlite:///{tmp_path}/ca.sqlite3", "--ca-cert", str(ca_cert), "--ek-anchor",
                               ek_anchors[0], "--bind", "127.0.0.1:1", *map(str, options)],
                              capture_output=True, text=True, env=dict(environment(), SOFTHSM2_CONF=str(conf)))

    cases = [
        (("--ca-key", uri, "--ca-key-passphrase-file", wrong_pin), cert, "CKR_PIN_INCORRECT"),
        (("--ca-key", uri), cert, "give the PIN of the token of"),
        (("--ca-key", uri, "--ca-key-passphrase-file", pin), encrypted_ca[1],
         "is not the key of the CA certificate"),
        (("--ca-key", uri, "--ca-key-passphrase-file", pin), cert, "give serve --pseudonym-key FILE"),
        (("--ca-key", uri.replace("ca%20key", "another"), "--ca-key-passphrase-file", pin), cert,
         "0 ECDSA private keys in the token match"),
        (("--ca-key", uri + "&pin-value=" + PIN), cert, "pin-value has no place in the URI"),
        (("--ca-key", uri.split("?")[0], "--ca-key-passphrase-file", pin), cert, "names no module"),
    ]
    for options, ca_cert, said in cases:
        refused = serve(*options, ca_cert=ca_cert)
        assert refused.returncode == 2 and said in refused.stderr, (options, refused.stderr)


def test_a_token_that_stops_signing_is_503_and_signs_again_when_it_is_back(token, tmp_path, monkeypatch):
    """A fault of the token is the operator's, like a database that does not answer: 503 with
    Retry-After, never a 500; the key opens the token again once it is back."""
    from deviceid_verifier import PrivacyCA, Verifier
    from deviceid_verifier._pkcs11 import TokenKey
    from deviceid_verifier._service import make_app
    from deviceid_verifier._store import MemoryStore
    from test_service_inputs import call
    uri, cert, pin, conf = token
    certificate = x509.load_pem_x509_certificate(cert.read_bytes())
    monkeypatch.setenv("SOFTHSM2_CONF", str(conf))
    key = TokenKey(uri, PIN.encode(), certificate.public_key())
    key.check()
    key.close()
    store = MemoryStore()
    app = make_app(PrivacyCA(key, certificate, [], store=store, pseudonym_key=bytes(32)),
                   Verifier([certificate], store=store))
    (tmp_path / "empty").mkdir()
    elsewhere = tmp_path / "softhsm2.conf"
    elsewhere.write_text(f"directories.tokendir = {tmp_path / 'empty'}\nobjectstore.backend = file\n")
    monkeypatch.setenv("SOFTHSM2_CONF", str(elsewhere))  # the module, loaded anew, finds no such token
    status, headers, _ = call(app, "GET", "/v1/crl")
    assert (status, headers.get("Retry-After")) == (503, "1")
    monkeypatch.setenv("SOFTHSM2_CONF", str(conf))
    status, _, crl = call(app, "GET", "/v1/crl")
    assert status == 200 and x509.load_der_x509_crl(crl).is_signature_valid(certificate.public_key())


def test_risk_receipts_are_signed_by_a_key_in_a_token_and_verify_with_pyjwt(token, monkeypatch):
    """Issue 55: a receipt is signed through the CA key's own sign(), as certificates and CRLs are."""
    import jwt
    from deviceid_verifier import PrivacyCA
    from deviceid_verifier._pkcs11 import TokenKey
    from deviceid_verifier._store import MemoryStore
    uri, cert, pin, conf = token
    certificate = x509.load_pem_x509_certificate(cert.read_bytes())
    monkeypatch.setenv("SOFTHSM2_CONF", str(conf))
    key = TokenKey(uri, PIN.encode(), certificate.public_key())
    ca = PrivacyCA(key, certificate, [], store=MemoryStore(), pseudonym_key=bytes(32))
    receipt = ca.risk_receipt(APP, 2, b"\x00\x0bname", 0x55)
    key.close()
    claims = jwt.decode(receipt, certificate.public_key(), algorithms=["ES256"], options={"verify_nbf": False})
    assert (claims["app_id"], claims["risk"], claims["ak_certificate_serial"]) == (APP, 2, "55")
