"""DeviceCheck for Linux through the service (issue 55): the "device" object and the risk receipt
go to the tenant owning the evidence's app id and to no one else; writeDeviceBits and
refreshReceipt need that tenant's key; the receipt verifies with PyJWT (Debian's python3-jwt, a
JOSE library nobody here wrote) and the CA certificate alone, and not once a byte changed; racing
writes at two instances leave one write's bits. Run on PostgreSQL (two instances) and SQLite."""
import base64
import concurrent.futures
import datetime
import json
import time

import jwt
from cryptography import x509

from test_service import APP, enrol, fleet, ok, rejected, verification  # noqa: F401  (fleet: a fixture)
from test_service_inputs import validator
from verifier_command import cli

OTHER_APP = "com.example.devicecheck-other"
#: A tenant added is seen by every worker within 5 s (_service/_tenants.CACHE_SECONDS).
TAKES_EFFECT = 5.0 + 0.5


def add_tenant(database_url, name, app_id):
    made = cli("tenant", "add", name, "--app", app_id, "--database", database_url)
    assert made.returncode == 0, made.stderr
    return json.loads(made.stdout)["api_key"]


def bearer(key):
    return {"Authorization": f"Bearer {key}"}


def post(service, path, body, key=None):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return service.request("POST", path, data, headers=bearer(key) if key else None)


def wait_until_every_worker_knows(services, key):
    """Every worker of every instance takes `key` (each caches the tenants for at most 5 s)."""
    deadline = time.monotonic() + TAKES_EFFECT + 5
    while True:
        statuses = [post(s, "/v1/nonce", {"app_id": APP}, key)[0] for s in services for _ in range(8)]
        if set(statuses) == {200}:
            return
        assert time.monotonic() < deadline, statuses
        time.sleep(0.2)


def attest(machine, service, key, via=None):
    """The answer to a verifyAttestation of `machine`'s APP evidence on a nonce issued to `key`,
    posted with the key `via` (None: as a device posts it, with no key)."""
    issued = json.loads(ok(post(service, "/v1/nonce", {"app_id": APP}, key)))
    nonce = base64.b64decode(issued["nonce"])
    return json.loads(ok(post(service, "/v1/attestation/verify",
                              verification(machine.device.evidence(APP, nonce), nonce), via)))


def test_the_owning_tenant_gets_the_device_and_a_receipt_and_no_one_else(machine_a, fleet, database_url, ca_files):  # noqa: F811
    a, b = fleet
    enrol(machine_a, a, b)
    owner, other = add_tenant(database_url, "owner", APP), add_tenant(database_url, "other", OTHER_APP)
    wait_until_every_worker_knows(fleet, owner)

    # a device posting its own evidence, and another tenant's app server: the verification, nothing more
    for via in (None, other):
        answer = attest(machine_a, a, owner, via)
        assert answer["app_id"] == APP and "device" not in answer and "receipt" not in answer
    rejected(post(a, "/v1/attestation/verify", b"{}", "dvt_no-such-key"), 401, "unauthenticated")

    answer = attest(machine_a, b, owner, owner)
    validator("verification").validate(answer)
    assert answer["device"]["bits"] == [False, False, False] and answer["device"]["months"] == [None, None, None]
    assert answer["device"]["activity"] == "LEVEL_1"

    # the receipt: PyJWT with the CA certificate's key alone; nbf is the refresh time, not yet reached
    ca_key = x509.load_pem_x509_certificate(open(ca_files[1], "rb").read()).public_key()
    receipt = answer["receipt"]
    claims = jwt.decode(receipt, ca_key, algorithms=["ES256"], options={"verify_nbf": False,
                        "require": ["app_id", "risk", "iat", "nbf", "exp"]})
    assert claims["app_id"] == APP and claims["risk"] == answer["risk"] == 1
    assert claims["ak_name"] == answer["ak_name"] and claims["ak_certificate_serial"] == answer["ak_certificate_serial"]
    assert claims["nbf"] - claims["iat"] == 86400 and claims["exp"] - claims["iat"] == 30 * 86400
    assert abs(claims["iat"] - time.time()) < 300
    for index in range(len(receipt)):  # every byte changed: no longer the CA's
        if receipt[index] == ".":
            continue
        changed = receipt[:index] + ("A" if receipt[index] != "A" else "B") + receipt[index + 1:]
        try:
            jwt.decode(changed, ca_key, algorithms=["ES256"], options={"verify_nbf": False})
        except jwt.exceptions.InvalidTokenError:
            continue
        # base64url's last character may carry padding bits the decoder drops: the bytes are the same
        assert base64.urlsafe_b64decode(changed.rsplit(".", 1)[1] + "==") == base64.urlsafe_b64decode(
            receipt.rsplit(".", 1)[1] + "=="), index

    # identical repeated attestations are counted once: the figure counts AK certificates, and a
    # second verification of the same AK adds none
    assert attest(machine_a, a, owner, owner)["risk"] == 1

    # refreshReceipt: the owner's key only; before nbf the same receipt
    body = {"receipt": receipt}
    rejected(post(a, "/v1/receipt/refresh", body), 401, "unauthenticated")
    rejected(post(a, "/v1/receipt/refresh", body, other), 403, "tenant-mismatch")
    refreshed = json.loads(ok(post(b, "/v1/receipt/refresh", body, owner)))
    validator("receipt").validate(refreshed)
    assert refreshed == body
    forged = receipt[:-4] + ("AAAA" if not receipt.endswith("AAAA") else "BBBB")
    rejected(post(a, "/v1/receipt/refresh", {"receipt": forged}, owner), 403, "receipt-invalid")


def test_write_device_bits_with_the_token_of_a_verification(machine_a, fleet, database_url):  # noqa: F811
    a, b = fleet
    enrol(machine_a, a, b)
    owner, other = add_tenant(database_url, "owner", APP), add_tenant(database_url, "other", OTHER_APP)
    wait_until_every_worker_knows(fleet, owner)
    token = attest(machine_a, a, owner, owner)["device"]["token"]

    request = {"token": token, "bits": [True, False, True]}
    rejected(post(a, "/v1/device/bits", request), 401, "unauthenticated")
    rejected(post(a, "/v1/device/bits", request, other), 403, "tenant-mismatch")
    forged = token[:10] + ("A" if token[10] != "A" else "B") + token[11:]
    rejected(post(a, "/v1/device/bits", {**request, "token": forged}, owner), 403, "token-invalid")
    for hostile in ({"token": token}, {"token": token, "bits": [True, False]}, {"token": token, "bits": [1, 0, 1]},
                    {"token": 7, "bits": [True, False, True]}, [], b"{", b"\xff"):
        status, _, answer = post(a, "/v1/device/bits", hostile, owner)
        assert status == 400 and json.loads(answer)["rejected"] == "malformed", (hostile, answer)

    month = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m")
    written = json.loads(ok(post(b, "/v1/device/bits", request, owner)))
    validator("device").validate(written)
    assert (written["bits"], written["months"], written["token"]) == ([True, False, True], [month, None, month], token)
    # read back in the owner's next verification, at the other instance; never the other tenant's
    device = attest(machine_a, a, owner, owner)["device"]
    assert (device["bits"], device["months"]) == ([True, False, True], [month, None, month])
    assert device["token"] != token  # a new one each time, nothing in the clear

    # racing writes through both instances: the record holds one write's bits
    patterns = [[bool(i & 1), bool(i & 2), bool(i & 4)] for i in range(1, 8)] * 3
    with concurrent.futures.ThreadPoolExecutor(len(patterns)) as pool:
        answers = list(pool.map(lambda i: post(fleet[i % 2], "/v1/device/bits",
                                               {"token": token, "bits": patterns[i]}, owner), range(len(patterns))))
    assert {status for status, _, _ in answers} == {200}
    final = attest(machine_a, b, owner, owner)["device"]["bits"]
    assert final in patterns and final in [json.loads(body)["bits"] for _, _, body in answers]

    # all false removes the record: its months go with it
    ok(post(a, "/v1/device/bits", {"token": token, "bits": [False, False, False]}, owner))
    device = attest(machine_a, b, owner, owner)["device"]
    assert (device["bits"], device["months"]) == ([False, False, False], [None, None, None])


def test_tenant_operations_answer_4xx_to_hostile_bodies(fleet, database_url):  # noqa: F811
    a, _ = fleet
    owner = add_tenant(database_url, "owner", APP)
    wait_until_every_worker_knows(fleet, owner)
    for path in ("/v1/device/bits", "/v1/receipt/refresh"):
        for body in (b"", b"{", b"[]", b"null", b"{}", b'{"receipt":1}', b'{"token":"","bits":[]}', b"\xff\xfe",
                     b'{"receipt":"a.b.c"}', b'{"receipt":"' + b"A" * 5000 + b'"}', b'{"a":1,"a":2}',
                     b'{"token":"' + b"\xc3\xa9" * 40 + b'","bits":[true,true,true]}', b"[" * 10000):
            for key in (None, owner):
                status, _, answer = post(a, path, body, key)
                assert 400 <= status < 500, (path, body[:60], status, answer)
                assert set(json.loads(answer)) >= {"rejected", "message"}
