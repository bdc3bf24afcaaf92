"""DeviceCheck for Linux in process (issue 55), with a clock the test moves: the token's window,
the activity levels and their sliding hour, the receipt's refresh (itself before nbf, a new figure
after, nothing past its retention) through PrivacyCA and the service's 404, and receipts of every
kind of CA key verified by PyJWT (Debian's python3-jwt)."""
import datetime
import io
import json

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from deviceid_verifier import PrivacyCA, Rejected, Verifier, _chain
from deviceid_verifier._devicecheck import TOKEN_WINDOW
from deviceid_verifier._service import make_app
from deviceid_verifier._store import CertificateRecord, Limit, MemoryStore
from machines import make_ca_certificate
from test_service_inputs import call as call_without_key

T0 = datetime.datetime(2026, 12, 6, 10, 0, 0)
APP = "com.example.devicecheck"
EK = b"e" * 32
SECOND_EK = b"f" * 32


class Clock:
    def __init__(self, monkeypatch):
        self.now = T0
        monkeypatch.setattr(_chain, "utcnow", lambda: self.now)


@pytest.fixture
def ca(monkeypatch):
    key, certificate = make_ca_certificate("devicecheck CA")
    return PrivacyCA(key, certificate, [], store=MemoryStore(), pseudonym_key=bytes(range(32)))


def issue(ca, serial, now, ek=EK):
    assert ca.store.add_certificate(CertificateRecord(serial, ek, APP, b"\x00\x0b" + b"n" * 32, now,
                                                      now + datetime.timedelta(days=365)), Limit(10, TOKEN_WINDOW)) is None


def test_a_token_writes_for_its_window_for_its_tenant_only(ca, monkeypatch):
    clock = Clock(monkeypatch)
    check = ca.device_check
    assert check.key("t1", EK) != check.key("t2", EK)  # one TPM, two tenants: two unrelated keys
    token = check.seen("t1", EK, assertion=False).token
    clock.now = T0 + TOKEN_WINDOW
    assert check.write("t1", token, [False, True, False]).bits == (False, True, False)
    assert check.seen("t1", EK, assertion=False).months == (None, "2026-12", None)
    assert check.seen("t2", EK, assertion=False).bits == (False, False, False)
    with pytest.raises(Rejected) as refused:
        check.write("t2", token, [True, True, True])
    assert refused.value.reason == "tenant-mismatch"
    clock.now = T0 + TOKEN_WINDOW + datetime.timedelta(microseconds=1)
    with pytest.raises(Rejected) as refused:
        check.write("t1", token, [True, True, True])
    assert refused.value.reason == "token-expired"
    # a month changes only with its bit
    clock.now = datetime.datetime(2027, 2, 1)
    fresh = check.seen("t1", EK, assertion=False).token
    assert check.write("t1", fresh, [True, True, False]).months == ("2027-02", "2026-12", None)


def test_the_bits_are_the_devices_across_its_eks(ca, monkeypatch):
    Clock(monkeypatch)
    check = ca.device_check
    check.write("t1", check.seen("t1", EK, assertion=False).token, [True, False, False])
    assert check.seen("t1", SECOND_EK, assertion=False).bits == (False, False, False)  # not yet one TPM
    ca.store.link([EK, SECOND_EK])  # an enrolment proved both EKs in one TPM
    assert check.seen("t1", SECOND_EK, assertion=False).bits == (True, False, False)


def test_activity_levels_count_the_assertions_of_a_sliding_hour(ca, monkeypatch):
    clock = Clock(monkeypatch)
    check = ca.device_check
    levels = [check.seen("t1", EK, assertion=True).activity for _ in range(51)]
    assert levels[9] == "LEVEL_1" and levels[10] == "LEVEL_2" and levels[24] == "LEVEL_2"
    assert levels[25] == "LEVEL_3" and levels[49] == "LEVEL_3" and levels[50] == "LEVEL_4"
    assert check.seen("t2", EK, assertion=False).activity == "LEVEL_1"  # the tenant's count, not another's
    assert check.seen("t1", EK, assertion=False).activity == "LEVEL_4"  # a verification reads, never counts
    clock.now = T0 + datetime.timedelta(minutes=90)  # half the hour before still in the last hour: 25
    assert check.seen("t1", EK, assertion=False).activity == "LEVEL_2"
    clock.now = T0 + datetime.timedelta(hours=2)
    assert check.seen("t1", EK, assertion=False).activity == "LEVEL_1"
    ca.store.purge(clock.now)  # bounded: the record of hours gone is removed
    assert ca.store.tenant_device("t1", check.key("t1", EK), [], clock.now, False) == (None, None)


def test_a_receipt_refreshes_to_itself_then_to_the_figure_then_to_nothing(ca, monkeypatch):
    clock = Clock(monkeypatch)
    issue(ca, 0x51, T0)
    receipt = ca.risk_receipt(APP, 1, b"\x00\x0b" + b"n" * 32, 0x51)
    key = ca.certificate.public_key()
    clock.now = T0 + datetime.timedelta(hours=23)
    assert ca.refresh_receipt(receipt, [APP]) == receipt
    with pytest.raises(Rejected) as refused:
        ca.refresh_receipt(receipt, ["com.example.not-theirs"])
    assert refused.value.reason == "tenant-mismatch"
    issue(ca, 0x52, clock.now, ek=SECOND_EK)  # another EK of the same TPM: the figure is per TPM
    ca.store.link([EK, SECOND_EK])
    clock.now = T0 + datetime.timedelta(days=1)
    refreshed = ca.refresh_receipt(receipt, [APP])
    claims = jwt.decode(refreshed, key, algorithms=["ES256"], options={"verify_nbf": False, "verify_exp": False, "verify_iat": False})
    assert refreshed != receipt and claims["risk"] == 2 and claims["iat"] == int(
        (clock.now - datetime.datetime(1970, 1, 1)).total_seconds())
    assert ca.refresh_receipt(refreshed, [APP]) == refreshed
    # past its retention: not found (404 through the service)
    clock.now = T0 + datetime.timedelta(days=30, seconds=1)
    with pytest.raises(Rejected) as refused:
        ca.refresh_receipt(receipt, [APP])
    assert refused.value.reason == "receipt-expired"
    app = make_app(ca, Verifier([ca.certificate], store=ca.store))
    status, _, body = call_without_key(app, "POST", "/v1/receipt/refresh", json.dumps({"receipt": receipt}).encode())
    assert status == 401  # no tenants: the service has no one to refresh for
    assert ca.store.add_tenant(_tenant()) is None
    status, _, body = call(app, "POST", "/v1/receipt/refresh", json.dumps({"receipt": receipt}).encode(),
                           headers={"Authorization": "Bearer dvt_devicecheck"})
    assert (status, json.loads(body)["rejected"]) == (404, "receipt-expired")


def call(app, method, path, body, headers):
    captured = {}

    def start_response(status, headers):
        captured["status"] = int(status.split()[0])

    environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "CONTENT_LENGTH": str(len(body)),
               "wsgi.input": io.BytesIO(body), **{"HTTP_" + k.upper(): v for k, v in headers.items()}}
    data = b"".join(app(environ, start_response))
    return captured["status"], None, data


def _tenant():
    from deviceid_verifier import Tenant
    from deviceid_verifier._service._tenants import key_digest
    return Tenant("t1", (APP,), key_digest("dvt_devicecheck"), T0)


@pytest.mark.parametrize("curve_or_rsa, alg", [(ec.SECP256R1(), "ES256"), (ec.SECP384R1(), "ES384"),
                                                 (ec.SECP521R1(), "ES512"), ("rsa", "RS256")])
def test_receipts_of_every_kind_of_ca_key_verify_with_pyjwt(curve_or_rsa, alg, monkeypatch):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import NameOID
    Clock(monkeypatch)
    key = rsa.generate_private_key(65537, 2048) if curve_or_rsa == "rsa" else ec.generate_private_key(curve_or_rsa)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "receipt CA")])
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                   .serial_number(1).not_valid_before(T0).not_valid_after(T0 + datetime.timedelta(days=999))
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .sign(key, hashes.SHA256()))
    ca = PrivacyCA(key, certificate, [], store=MemoryStore(), pseudonym_key=bytes(32))
    receipt = ca.risk_receipt(APP, 3, b"\x00\x0bname", 0x51)
    assert jwt.get_unverified_header(receipt)["alg"] == alg
    claims = jwt.decode(receipt, key.public_key(), algorithms=[alg], options={"verify_nbf": False, "verify_exp": False, "verify_iat": False})
    assert (claims["app_id"], claims["risk"], claims["ak_certificate_serial"]) == (APP, 3, "51")


def test_forget_bits_is_the_operators_retention(tmp_path):
    from deviceid_verifier import open_store
    from verifier_command import cli
    database = f"sqlite:///{tmp_path}/retention.sqlite3"
    store = open_store(database)
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    store.write_bits("t1", b"k" * 32, (True, False, False), now - datetime.timedelta(days=31))
    store.write_bits("t1", b"l" * 32, (True, False, False), now - datetime.timedelta(days=29))
    forgot = cli("forget-bits", "--older-than", "30", "--database", database)
    assert (forgot.returncode, json.loads(forgot.stdout)) == (0, {"forgotten": 1}), forgot.stderr
    assert store.device_bits("t1", [b"k" * 32]) is None and store.device_bits("t1", [b"l" * 32]) is not None
    assert cli("forget-bits", "--older-than", "0", "--database", database).returncode == 2
