"""Issue 51, case 2: every assertion checks again the AK certificate that certified its
credential, as registration checked it. Once the certificate expired, an assertion is refused
even when the CA's next CRL no longer lists it (RFC 5280 §3.3 lets a CA drop a revoked
certificate after its expiry); once a CA rotation finished (the old CA no longer among the
verifier's), the old CA's credentials no longer assert; a credential registered before the
store kept what this takes (migration 0006) is refused until it is registered again. On each
store that keeps credentials, with a real swtpm and the `deviceid` command."""
import base64
import datetime
import itertools
import json

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization

from deviceid_verifier import Rejected, WebAuthnVerifier, _chain, open_store
from test_deviceid_device import enrol
from test_webauthn import ORIGIN, asserted, signed_in

APPS = (f"com.example.ak-recheck-{i}" for i in itertools.count())
DER = serialization.Encoding.DER
#: Long enough for an enrolment, a registration and two assertions on a busy machine.
SHORT_LIFETIME = datetime.timedelta(seconds=12)


def rejected(reason, call, *args):
    with pytest.raises(Rejected) as caught:
        call(*args)
    assert caught.value.reason == reason, (caught.value.reason, str(caught.value))
    return caught.value


def not_after(certificate_message):
    """The notAfter of the AK certificate in a deviceid.ak-certificate message, naive UTC."""
    der = base64.b64decode(json.loads(certificate_message)["certificate"])
    return x509.load_der_x509_certificate(der).not_valid_after


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def crl_without_expired(ca, number):
    """A current CRL of `ca`'s key listing nothing: what a CA following RFC 5280 §3.3 may publish
    once the revoked certificates it listed have expired (DeviceID's CA keeps them a day longer)."""
    now = utcnow()
    return (x509.CertificateRevocationListBuilder().issuer_name(ca.certificate.subject)
            .last_update(now).next_update(now + datetime.timedelta(days=1))
            .add_extension(x509.CRLNumber(number), critical=False)
            .sign(ca._key, hashes.SHA256()).public_bytes(DER))


def test_a_revoked_credential_stays_out_once_its_expired_certificate_left_the_crl(machine_a, make_ca, database_url,
                                                                                   tmp_path, monkeypatch):
    ca = make_ca("short-lived AK CA", certificate_lifetime=SHORT_LIFETIME)
    app = next(APPS)
    certificate = enrol(machine_a, app, ca)
    app_server = WebAuthnVerifier([ca.certificate], origins=[ORIGIN], store=open_store(database_url),
                                  crls=[ca.crl().public_bytes(DER)])
    credential = signed_in(app_server, machine_a, app, certificate, tmp_path)
    app_server.verify_assertion(*asserted(app_server, machine_a, app))
    assert ca.revoke(credential.ak_serial, "key-compromise")
    assert app_server.load_crl(ca.crl().public_bytes(DER)) is True
    rejected("revoked", app_server.verify_assertion, *asserted(app_server, machine_a, app))
    expiry = not_after(certificate)
    assert utcnow() < expiry, "the steps above took longer than the certificate lived: raise SHORT_LIFETIME"

    # the certificate's own lifetime passing: the verifier's clock (and its CA's) moved past the
    # notAfter, still ticking, rather than the test waiting it out
    ahead = expiry + datetime.timedelta(seconds=1) - utcnow()
    monkeypatch.setattr(_chain, "utcnow", lambda: utcnow() + ahead)
    serials = [entry.serial_number for entry in ca.crl()]
    assert credential.ak_serial in serials, "DeviceID's CA keeps an expired revoked certificate a day"
    dropped = crl_without_expired(ca, number=2**62)
    assert app_server.load_crl(dropped) is True
    rejection = rejected("ak-untrusted", app_server.verify_assertion, *asserted(app_server, machine_a, app))
    assert "expired" in rejection.message and f"{credential.ak_serial:x}" in rejection.message, rejection.message


def test_after_a_ca_rotation_finished_the_old_cas_credentials_no_longer_assert(machine_a, make_ca, database_url,
                                                                               tmp_path):
    old, new = make_ca("rotated CA"), make_ca("rotated CA")  # `new-ca --name` twice: one name, two keys
    store = open_store(database_url)
    during = WebAuthnVerifier([old.certificate, new.certificate], origins=[ORIGIN], store=store)
    app_old, app_new = next(APPS), next(APPS)
    signed_in(during, machine_a, app_old, enrol(machine_a, app_old, old), tmp_path)
    signed_in(during, machine_a, app_new, enrol(machine_a, app_new, new), tmp_path)
    during.verify_assertion(*asserted(during, machine_a, app_old))

    after = WebAuthnVerifier([new.certificate], origins=[ORIGIN], store=open_store(database_url))
    rejection = rejected("ak-untrusted", after.verify_assertion, *asserted(after, machine_a, app_old))
    assert "no longer one this verifier trusts" in rejection.message, rejection.message
    assert after.verify_assertion(*asserted(after, machine_a, app_new)).app_id == app_new


def test_a_credential_registered_before_migration_0006_asserts_again_once_registered_again(machine_a, ca,
                                                                                           database_url, tmp_path):
    app = next(APPS)
    store = open_store(database_url)
    app_server = WebAuthnVerifier([ca.certificate], origins=[ORIGIN], store=store)
    certificate = enrol(machine_a, app, ca)
    credential = signed_in(app_server, machine_a, app, certificate, tmp_path)
    counter = app_server.verify_assertion(*asserted(app_server, machine_a, app)).counter
    with store._tx() as cursor:  # the row as migration 0006 leaves a credential of 1.0
        cursor.execute("UPDATE credentials SET ak_anchor = NULL, ak_not_after = NULL")
    assert app_server.credential(credential.credential_id).ak_anchor is None
    rejection = rejected("credential-unknown", app_server.verify_assertion, *asserted(app_server, machine_a, app))
    assert "register it again" in rejection.message
    again = signed_in(app_server, machine_a, app, certificate, tmp_path)
    assert (again.counter, again.ak_anchor, again.ak_not_after) == (counter, credential.ak_anchor,
                                                                    credential.ak_not_after)
    assert app_server.verify_assertion(*asserted(app_server, machine_a, app)).counter > counter


def test_through_the_service_a_finished_rotation_refuses_the_old_cas_credentials(machines, database_url, ca_files,
                                                                                   ek_anchors, tmp_path):
    """The operator's rotation of the CA (docs/SERVER.md, "Operators"): the service on the new CA with
    `--trust-ca OLD.pem` still accepts the old CA's credentials (200); once `--trust-ca` is dropped,
    403 ak-untrusted (1.0 answered 200)."""
    from conftest import Service
    from test_service import ok
    from test_service import rejected as refused
    from test_webauthn_service import assertion, enrol as enrol_over_http, registration
    key, certificate = new_ca_files(tmp_path)
    machine = machines(f"rotation-{database_url[:6]}")
    app = next(APPS)
    started = []

    def serve(files, *extra):
        started.append(Service(database_url, files, ek_anchors, workers=1, extra=extra))
        return started[-1]

    try:
        old = serve(ca_files)
        ok(old.post("/v1/webauthn/register", registration(machine, old, app, enrol_over_http(machine, old, old, app),
                                                          tmp_path)))
        ok(old.post("/v1/assertion/verify", assertion(machine, old, app)))
        during = serve((key, certificate), "--trust-ca", ca_files[1])
        ok(during.post("/v1/assertion/verify", assertion(machine, during, app)))
        after = serve((key, certificate))
        body, _ = refused(after.post("/v1/assertion/verify", assertion(machine, after, app)), 403, "ak-untrusted")
        assert "no longer one this verifier trusts" in body["message"], body
    finally:
        for service in started:
            service.stop()
        machine.tpm.stop()


def new_ca_files(directory):
    """(key PEM path, certificate PEM path) of another Privacy CA, as `new-ca` makes one."""
    from machines import make_ca_certificate
    key, certificate = make_ca_certificate("deviceid rotated-to CA")
    key_path, cert_path = directory / "new-ca.key", directory / "new-ca.pem"
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    return str(key_path), str(cert_path)
