"""Revocation at an app server that does not share the Privacy CA's store: it holds the CA's
CRL (what `GET /v1/crl` and `python3 -m deviceid_verifier crl` publish) and rejects the AK
certificates on it, for v1 evidence and for App Attest registrations and assertions; a CRL it
cannot trust is refused when loaded, and one past its nextUpdate leaves revocation undecided
("revocation-unknown"), never "not revoked"."""
import base64
import datetime
import itertools
import json
import random
import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from deviceid_verifier import Rejected, Verifier, WebAuthnVerifier
from verifier_command import cli

APPS = (f"com.example.crl-{i}" for i in itertools.count())
DER, PEM = serialization.Encoding.DER, serialization.Encoding.PEM


def rejected(reason, call, *args, **kw):
    with pytest.raises(Rejected) as caught:
        call(*args, **kw)
    assert caught.value.reason == reason, (caught.value.reason, str(caught.value))
    return caught.value


def verified(verifier, enrolled):
    machine, app = enrolled
    nonce = verifier.new_nonce()
    return verifier.verify(machine.device.evidence(app, nonce), nonce, app_id=app)


@pytest.fixture
def enrolled(machine_a, ca):
    """(machine A, an app id enrolled with `ca` for this test alone: revocations stay its own)."""
    app = next(APPS)
    machine_a.device.enrol(ca, app)
    return machine_a, app


def test_a_revoked_ak_is_rejected_once_its_crl_is_loaded(enrolled, ca):
    app_server = Verifier([ca.certificate])  # its own store: the CA's revocations reach it by CRL only
    serial = verified(app_server, enrolled).ak_certificate.serial_number
    assert app_server.load_crl(ca.crl().public_bytes(DER)) is True
    verified(app_server, enrolled)  # a CRL without this AK
    assert ca.revoke(serial, "key-compromise")
    verified(app_server, enrolled)  # the CRL held is older than the revocation
    crl = ca.crl()
    assert app_server.load_crl(crl.public_bytes(PEM)) is True
    assert app_server.load_crl(crl.public_bytes(DER)) is False, "the same CRL again replaces nothing"
    rejection = rejected("revoked", verified, app_server, enrolled)
    assert f"{serial:x}" in rejection.message
    fresh = Verifier([ca.certificate], crls=[crl.public_bytes(DER)])
    rejected("revoked", verified, fresh, enrolled)


def future(ca):
    """A CRL of `ca`'s key whose lastUpdate is an hour ahead (a CA host with a wrong clock)."""
    now = datetime.datetime.utcnow() + datetime.timedelta(hours=1)
    return (x509.CertificateRevocationListBuilder().issuer_name(ca.certificate.subject).last_update(now)
            .next_update(now + datetime.timedelta(days=1)).sign(ca._key, hashes.SHA256()).public_bytes(DER))


def test_a_crl_of_another_ca_of_the_same_name_does_not_hide_a_revocation(enrolled, ca, make_ca):
    twin = make_ca(ca.certificate.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value)
    assert twin.certificate.subject == ca.certificate.subject  # `new-ca --name` twice, as in a rotation
    app_server = Verifier([ca.certificate, twin.certificate])
    serial = verified(app_server, enrolled).ak_certificate.serial_number
    assert ca.revoke(serial, "key-compromise")
    assert app_server.load_crl(ca.crl().public_bytes(DER)) is True
    time.sleep(1.1)  # the twin's CRL is newer by its lastUpdate too
    assert app_server.load_crl(twin.crl().public_bytes(DER)) is True, "the twin's CRL is held beside, not instead"
    rejected("revoked", verified, app_server, enrolled)


def test_a_crl_no_trusted_ca_signed_is_refused_when_loaded(ca, new_ca_certificate):
    app_server = Verifier([ca.certificate])
    impostor_key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.utcnow()
    forged = (x509.CertificateRevocationListBuilder().issuer_name(ca.certificate.subject)
              .last_update(now).next_update(now + datetime.timedelta(days=1))
              .sign(impostor_key, hashes.SHA256()))
    other_key, other_certificate = new_ca_certificate("another CA")
    other = (x509.CertificateRevocationListBuilder().issuer_name(other_certificate.subject)
             .last_update(now).next_update(now + datetime.timedelta(days=1)).sign(other_key, hashes.SHA256()))
    for data, words in ((forged.public_bytes(DER), "no trusted CA"), (other.public_bytes(DER), "no trusted CA"),
                        (b"not a CRL", "not a CRL"), (ca.certificate.public_bytes(DER), "not a CRL"),
                        (ca.crl(next_update=datetime.timedelta(seconds=-30)).public_bytes(DER), "past"),
                        (future(ca), "ahead of this clock")):
        with pytest.raises(ValueError) as caught:
            app_server.load_crl(data)
        assert words in str(caught.value), caught.value


def test_a_crl_past_its_next_update_leaves_revocation_undecided(enrolled, ca):
    app_server = Verifier([ca.certificate], crls=[ca.crl(next_update=datetime.timedelta(seconds=1)).public_bytes(DER)])
    verified(app_server, enrolled)
    time.sleep(1.2)
    rejected("revocation-unknown", verified, app_server, enrolled)
    assert app_server.load_crl(ca.crl().public_bytes(DER)) is True
    verified(app_server, enrolled)


def test_the_command_line_verifies_with_a_crl(enrolled, ca, tmp_path):
    certificate, nonces, crl = tmp_path / "ca.pem", tmp_path / "nonces.json", tmp_path / "ca.crl"
    certificate.write_bytes(ca.certificate.public_bytes(PEM))

    def verify(*extra):
        nonce = cli("nonce", "--state", nonces)
        assert nonce.returncode == 0, nonce.stderr
        evidence = enrolled[0].device.evidence(enrolled[1], base64.b64decode(nonce.stdout.strip()))
        return cli("verify", "--ca-cert", certificate, "--state", nonces, *extra, input=evidence)

    crl.write_bytes(ca.crl().public_bytes(DER))
    passed = verify("--crl", crl)
    assert passed.returncode == 0, passed.stderr
    app_server = Verifier([ca.certificate])  # for the serial
    ca.revoke(verified(app_server, enrolled).ak_certificate.serial_number, "superseded")
    crl.write_bytes(ca.crl().public_bytes(PEM))
    result = verify("--crl", crl)
    assert result.returncode == 1 and json.loads(result.stderr)["rejected"] == "revoked", result.stderr
    crl.write_bytes(b"garbage")
    bad = verify("--crl", crl)
    assert bad.returncode == 2 and "not a CRL" in bad.stderr, bad.stderr


def test_any_changed_byte_of_a_crl_is_refused_with_a_value_error_or_changes_nothing_signed(ca, enrolled):
    """20,000 CRLs with one to three bytes changed, removed or inserted (seed fixed): each is
    refused with ValueError (cryptography 38 raised InvalidVersion for 11 of them before it was
    caught), or it is the same signed list."""
    serial = verified(Verifier([ca.certificate]), enrolled).ak_certificate.serial_number
    assert ca.revoke(serial, "superseded")  # an entry on the list, for the changes to reach
    original = ca.crl()
    der = original.public_bytes(DER)
    chooser = random.Random(20261203)
    outcomes = {"refused": 0, "same list": 0}
    for _ in range(20_000):
        data = bytearray(der)
        for _ in range(chooser.randint(1, 3)):
            at = chooser.randrange(len(data))
            kind = chooser.randrange(3)
            if kind == 0:
                data[at] = chooser.randrange(256)
            elif kind == 1:
                del data[at]
            else:
                data.insert(at, chooser.randrange(256))
        holder = Verifier([ca.certificate])
        try:
            holder.load_crl(bytes(data))
        except ValueError:
            outcomes["refused"] += 1
            continue
        loaded = x509.load_der_x509_crl(bytes(data))
        assert loaded.tbs_certlist_bytes == original.tbs_certlist_bytes
        outcomes["same list"] += 1
    assert outcomes["refused"] > 19_000, outcomes
