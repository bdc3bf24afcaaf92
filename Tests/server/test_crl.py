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

from deviceid_verifier import CertificateRecord, MemoryStore, PrivacyCA, Rejected, Verifier, WebAuthnVerifier, open_store
from deviceid_verifier._store._sql import micros
from test_service import fleet  # noqa: F401  (a fixture)
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


# -- issue 51, case 9: the CRL at fleet size, and what RFC 5280 says a holder must refuse --------

def signed_crl(ca, *extensions, entries=()):
    """A current CRL of `ca`'s key with `extensions` ((extension, critical) pairs) and `entries`."""
    now = datetime.datetime.utcnow()
    builder = (x509.CertificateRevocationListBuilder().issuer_name(ca.certificate.subject).last_update(now)
               .next_update(now + datetime.timedelta(days=1)))
    for extension, critical in extensions:
        builder = builder.add_extension(extension, critical=critical)
    for entry in entries:
        builder = builder.add_revoked_certificate(entry)
    return builder.sign(ca._key, hashes.SHA256()).public_bytes(DER)


def test_a_delta_crl_and_critical_extensions_it_does_not_process_are_refused_when_loaded(ca):
    """RFC 5280 §5.2.4: a delta CRL lists only what changed since a base CRL; a holder of
    complete CRLs would take it for the whole list. §5.2 and §5.3: a CRL with a critical
    extension (of the list, or of an entry) that the holder does not process must not be used."""
    unknown = x509.UnrecognizedExtension(x509.ObjectIdentifier("1.3.6.1.4.1.55555.1"), b"\x05\x00")
    scope = x509.IssuingDistributionPoint(None, None, True, False, None, False, False)
    indirect = (x509.RevokedCertificateBuilder().serial_number(7).revocation_date(datetime.datetime.utcnow())
                .add_extension(x509.CertificateIssuer([x509.DNSName("other.example")]), critical=True).build())
    app_server = Verifier([ca.certificate])
    for data, words in ((signed_crl(ca, (x509.DeltaCRLIndicator(1), True)), "delta CRL"),
                        (signed_crl(ca, (unknown, True)), "critical extension this verifier does not process"),
                        (signed_crl(ca, (scope, True)), "issuingDistributionPoint"),
                        (signed_crl(ca, entries=[indirect]), "critical extension (such as certificateIssuer")):
        with pytest.raises(ValueError) as caught:
            app_server.load_crl(data)
        assert words in str(caught.value), caught.value
    assert app_server.load_crl(signed_crl(ca, (unknown, False))) is True, "a non-critical one may be ignored"


def test_the_cas_crl_is_the_one_cryptographys_builder_makes_of_the_same_entries(new_ca_certificate):
    """The CA writes the entries by hand (_crl_der): its list must be the builder's, byte for byte,
    for serial numbers at every length boundary of a DER INTEGER."""
    key, certificate = new_ca_certificate("hand-written CRL CA")
    store = MemoryStore()
    ca = PrivacyCA(key, certificate, [certificate], store=store)
    now = datetime.datetime.utcnow().replace(microsecond=0)
    serials = [1, 127, 128, 255, 256, 32767, 32768, 2**64, 2**159 - 1, x509.random_serial_number()]
    for index, serial in enumerate(serials):
        assert store.add_certificate(CertificateRecord(serial, bytes([index]) * 32, "com.example.a", b"n", now,
                                                       now + datetime.timedelta(days=1)), store.limit()) is None
        assert ca.revoke(serial, "superseded")
    made = ca.crl()
    builder = (x509.CertificateRevocationListBuilder().issuer_name(made.issuer).last_update(made.last_update)
               .next_update(made.next_update))
    for extension in made.extensions:
        builder = builder.add_extension(extension.value, extension.critical)
    for serial, revoked in store.revoked(now):
        builder = builder.add_revoked_certificate(x509.RevokedCertificateBuilder().serial_number(serial)
                                                  .revocation_date(revoked).build())
    assert made.tbs_certlist_bytes == builder.sign(key, hashes.SHA256()).tbs_certlist_bytes
    assert made.is_signature_valid(certificate.public_key())
    assert sorted(entry.serial_number for entry in made) == sorted(serials)
    held = Verifier([certificate], crls=[made.public_bytes(DER)])
    for serial in serials:  # a certificate of each serial, for check()
        leaf = (x509.CertificateBuilder().subject_name(certificate.subject).issuer_name(certificate.subject)
                .public_key(key.public_key()).serial_number(serial).not_valid_before(now)
                .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
        rejected("revoked", held._crls.check, leaf)


@pytest.mark.memory_too
def test_the_published_crl_is_built_once_per_revocation_and_every_host_serves_it(database_url, new_ca_certificate):
    """Two CAs on one store, as two hosts: each keeps the CRL it built until a revocation (at
    either) raises the store's generation; then the next request at either lists it."""
    key, certificate = new_ca_certificate("published CRL CA")
    first = open_store(database_url) if database_url != "memory:" else MemoryStore()
    second = open_store(database_url) if database_url != "memory:" else first
    a, b = PrivacyCA(key, certificate, [certificate], store=first), PrivacyCA(key, certificate, [certificate],
                                                                              store=second)
    now = datetime.datetime.utcnow()
    for serial in (11, 12):
        assert first.add_certificate(CertificateRecord(serial, bytes([serial]) * 32, "com.example.a", b"n", now,
                                                       now + datetime.timedelta(days=1)), first.limit()) is None
    built = a.published_crl()
    time.sleep(0.01)  # a rebuild now would carry another CRL number (microseconds)
    assert a.published_crl() == built, "nothing revoked: the same CRL, not a new one"
    assert b.revoke(11, "key-compromise")
    listed = a.published_crl()
    assert [entry.serial_number for entry in x509.load_der_x509_crl(listed)] == [11]
    assert [entry.serial_number for entry in x509.load_der_x509_crl(b.published_crl())] == [11]
    assert a.published_crl() == listed


def test_a_crl_of_100000_revoked_certificates_is_served_at_once_loaded_within_a_second_and_checked_in_o1(
        database_url, fleet, ca_files):  # noqa: F811
    """The issue's promises, with a margin only where the words leave one: served well under a
    second (once built), loaded by an app server in 1 s at most (the best of three, on a
    machine others share), a serial checked in constant time (10,000 checks well under a
    second; cryptography's search took 40 ms each). bench/crl.py reports the figures."""
    open_store(database_url).close()  # migrated
    now, day = micros(datetime.datetime.utcnow()), 86_400_000_000
    serials = [x509.random_serial_number() for _ in range(100_000)]
    # the fleet's records, written as an operator's bulk load would be: on a connection of its own,
    # not through the store, whose operations have a request's deadline (3 s; docs/SERVER.md "Faults")
    insert = ("INSERT INTO certificates (serial, ek_pseudonym, app_id, ak_name, issued, not_after, revoked, "
              "revocation_reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
    rows = [(format(serial, "x"), serial.to_bytes(20, "big"), "com.example.fleet", b"n", now, now + day, now,
             "superseded") for serial in serials]
    if database_url.startswith("postgresql"):
        import psycopg
        with psycopg.connect(database_url) as connection:
            connection.cursor().executemany(insert.replace("?", "%s"), rows)
    else:
        import sqlite3
        with sqlite3.connect(database_url[len("sqlite:///"):]) as connection:
            connection.executemany(insert, rows)
    a, b = fleet
    status, _, first = a.get("/v1/crl")  # built now, by the worker that answers
    assert status == 200
    start = time.perf_counter()
    status, _, served = b.get("/v1/crl")
    took = time.perf_counter() - start
    assert status == 200 and took < 1.0, took
    loads = []
    for _ in range(3):
        app_server = Verifier([x509.load_pem_x509_certificate(open(ca_files[1], "rb").read())])
        start = time.perf_counter()
        assert app_server.load_crl(served) is True
        loads.append(time.perf_counter() - start)
    assert min(loads) <= 1.0, loads
    [held] = app_server._crls._held.values()
    assert set(held.revoked) == set(serials)
    [anchor] = app_server._crls._held
    start = time.perf_counter()
    for serial in range(1, 10_001):  # none of them listed: the common case, a certificate in good standing
        app_server._crls.check_issued_by(anchor, serial)
    assert time.perf_counter() - start < 1.0
    rejected("revoked", app_server._crls.check_issued_by, anchor, serials[-1])
