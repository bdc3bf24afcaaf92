"""The CA key as production keeps it (issue 51, "Run as production runs it": the CA key only as an
unencrypted PEM): an encrypted PKCS #8 key, its passphrase from a file or the environment and
never on the command line, signing AK certificates through the service and the commands."""
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
