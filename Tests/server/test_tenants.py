"""Tenants (issue 51, "Run as production runs it"; docs/SERVER-STATE.md invariant 12): while the
service has none it is open, as a trial; once an operator adds one (`tenant add`, the interface
issue 55 gives), nonces and challenges are issued only to a tenant's API key (`Authorization:
Bearer KEY`), each bound to one of the tenant's app ids; verifications and devices' operations
need none (a device may post its own evidence)."""
import base64
import json
import math
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from deviceid_verifier import open_store

from conftest import Service
from test_service import APP, enrol, nonce_of, ok, rejected, start_fleet, verification
from verifier_command import cli

#: The promise: every worker of every instance sees a tenant added or removed within 5 s
#: (_service/_tenants.CACHE_SECONDS), so after that long each request must.
TAKES_EFFECT = 5.0 + 0.5


def operator(*argv) -> str:
    result = cli(*argv)
    assert result.returncode == 0, result.stderr
    return result.stdout


def bearer(key):
    return {"Authorization": f"Bearer {key}"}


def tenants_close_the_app_server_operations_and_devices_stay_open(enrolled, fleet, database_url):
    a, b = fleet
    ok(a.post("/v1/nonce"))  # the open trial
    added = json.loads(operator("tenant", "add", "fleet-owner", "--app", APP, "--app", "com.example.second",
                                "--database", database_url))
    key = added["api_key"]
    assert added["tenant"] == "fleet-owner" and key.startswith("dvt_") and len(key) > 40
    assert json.loads(operator("tenant", "list", "--database", database_url))["apps"] == [APP, "com.example.second"]
    time.sleep(TAKES_EFFECT)
    for service in (a, b):
        status, headers, body = service.post("/v1/nonce")
        assert headers["WWW-Authenticate"] == 'Bearer realm="deviceid-verifier"'
        assert json.loads(body)["rejected"] == "unauthenticated"
        for path in ("/v1/nonce", "/v1/webauthn/challenge"):
            for wrong in ({}, {"Authorization": "Bearer dvt_not-a-key"}, {"Authorization": key},
                          {"Authorization": "Basic x"}) * 4:  # more requests than workers: each worker's
                assert service.request("POST", path, b"", headers=wrong)[0] == 401
    # with the key, a nonce for one of the tenant's app ids (issued to the tenant, bound to that
    # app); its evidence verified without a key (a device may post it)
    for path in ("/v1/nonce", "/v1/webauthn/challenge"):
        for body in (b"", b"{}", json.dumps({"app_id": "com.example.not-theirs"}).encode()):
            rejected(a.request("POST", path, body, headers=bearer(key)), 403, "app-id-mismatch")
    issued = json.loads(ok(a.request("POST", "/v1/nonce", json.dumps({"app_id": APP}).encode(), headers=bearer(key))))
    assert issued["app_id"] == APP
    nonce = base64.b64decode(issued["nonce"])
    request = verification(enrolled.device.evidence(APP, nonce), nonce)
    assert json.loads(ok(b.post("/v1/attestation/verify", request)))["app_id"] == APP
    # devices need no key: an enrolment, the CA certificate, the CRL, health
    challenge = ok(a.post("/v1/enrolment/challenge", enrolled.device.enrolment_request(APP)))
    ok(b.post("/v1/enrolment/finish", enrolled.device.enrolment_response(challenge)))
    for path in ("/v1/ca-certificate", "/v1/crl", "/v1/health", "/openapi.json"):
        assert a.get(path)[0] == 200, path
    # a second tenant cannot take the first one's app id; removing the only one opens the service again
    taken = cli("tenant", "add", "other", "--app", APP, "--database", database_url)
    assert taken.returncode == 2 and "is the tenant 'fleet-owner'" in taken.stderr
    assert json.loads(operator("tenant", "remove", "fleet-owner", "--database", database_url)) == {
        "removed": "fleet-owner"}
    time.sleep(TAKES_EFFECT)
    for _ in range(8):  # more requests than workers: each worker's
        assert nonce_of(a) and nonce_of(b)


def tenant_issues(database_url):
    """The rows of tenant_issues: what the service counted."""
    store = open_store(database_url, migrate=False)
    try:
        with store._tx() as cursor:
            cursor.execute("SELECT tenant, issued FROM tenant_issues ORDER BY tenant")
            return cursor.fetchall()
    finally:
        store.close()


def a_tenant_at_its_issue_limit_is_429_and_no_other_tenant_is(fleet, database_url):
    """Invariant 14: a tenant's nonces and challenges count against its own issue limit, on every
    worker and instance; past it, 429 with Retry-After (the window's end), and another tenant's
    requests are answered as before; the operator's new limit holds within 5 s. Without tenants
    nothing is counted (the open trial, as before)."""
    a, b = fleet
    for _ in range(8):
        assert nonce_of(a) and nonce_of(b)
    assert tenant_issues(database_url) == []
    window = 86_400  # windows start at midnight UTC: not one ends during the test
    if window - time.time() % window < 120:
        time.sleep(window - time.time() % window + 1)
    keys = {}
    for name, app in (("busy", APP), ("calm", "com.example.calm")):
        keys[name] = json.loads(operator("tenant", "add", name, "--app", app, "--issued", "6", "--window",
                                         str(window), "--database", database_url))["api_key"]
    assert [json.loads(line)["issued"] for line in operator("tenant", "list", "--database",
                                                            database_url).splitlines()] == [6, 6]
    time.sleep(TAKES_EFFECT)

    def issue(service, name, path):
        body = json.dumps({"app_id": APP if name == "busy" else "com.example.calm"}).encode()
        return service.request("POST", path, body, headers=bearer(keys[name]))

    paths = ("/v1/nonce", "/v1/webauthn/challenge")
    for i in range(6):  # on every instance and worker, nonces and challenges alike
        ok(issue((a, b)[i % 2], "busy", paths[i // 2 % 2]))
    for service in (a, b) * 2:
        for path in paths:
            status, headers, body = issue(service, "busy", path)
            assert (status, json.loads(body)["rejected"]) == (429, "rate-limited"), body
            until_midnight = window - time.time() % window
            retry_after = json.loads(body)["retry_after"]
            assert abs(retry_after - until_midnight) < 60 and headers["Retry-After"] == str(math.ceil(retry_after))
    for i in range(6):  # the other tenant: as if the first had sent nothing
        ok(issue((a, b)[i % 2], "calm", paths[i % 2]))
    rejected(issue(a, "calm", "/v1/nonce"), 429, "rate-limited")
    assert tenant_issues(database_url) == [("busy", 6), ("calm", 6)]

    assert json.loads(operator("tenant", "set-limit", "busy", "--issued", "8", "--window", str(window),
                               "--database", database_url)) == {"tenant": "busy", "issued": 8, "window": window}
    time.sleep(TAKES_EFFECT)
    ok(issue(a, "busy", "/v1/nonce"))
    ok(issue(b, "busy", "/v1/webauthn/challenge"))
    rejected(issue(a, "busy", "/v1/nonce"), 429, "rate-limited")
    rejected(issue(b, "calm", "/v1/nonce"), 429, "rate-limited")
    assert cli("tenant", "set-limit", "nobody", "--issued", "1", "--window", "60", "--database",
               database_url).returncode == 2


KINDS = ["sqlite", "postgresql"]


@pytest.fixture(scope="module")
def side_by_side(postgresql, machines, ca_files, ek_anchors, tmp_path_factory):
    """Each scenario above on each store, with a fleet (start_fleet, as the other fleet tests have)
    and a database of its own, the first with a device of its own enrolled there: all four run at
    once, since each spends most of its time waiting out TAKES_EFFECT. (scenario, kind) → the
    future of its run."""
    started, runs = [], {}

    def services(database_url, count, **options):
        started.extend(Service(database_url, ca_files, ek_anchors, **options) for _ in range(count))
        return started[-count:]

    def new_fleet(kind):
        database_url = (postgresql.new_database() if kind == "postgresql"
                        else f"sqlite:///{tmp_path_factory.mktemp('tenants')}/deviceid.sqlite3")
        return start_fleet(database_url, services), database_url

    pool = ThreadPoolExecutor(2 * len(KINDS))
    try:
        for kind in KINDS:
            fleet, database_url = new_fleet(kind)
            device = machines(f"tenants-{kind}")
            enrol(device, *fleet)
            runs["close", kind] = pool.submit(tenants_close_the_app_server_operations_and_devices_stay_open,
                                              device, fleet, database_url)
            runs["limit", kind] = pool.submit(a_tenant_at_its_issue_limit_is_429_and_no_other_tenant_is,
                                              *new_fleet(kind))
        yield runs
    finally:
        pool.shutdown(wait=True)
        for service in started:
            service.quit()
        for service in started:
            service.stop()


@pytest.mark.parametrize("kind", KINDS)
def test_tenants_close_the_app_server_operations_and_devices_stay_open(side_by_side, kind):
    side_by_side["close", kind].result()


@pytest.mark.parametrize("kind", KINDS)
def test_a_tenant_at_its_issue_limit_is_429_and_no_other_tenant_is(side_by_side, kind):
    side_by_side["limit", kind].result()
