"""The verifier service as a fleet runs it: several `serve` instances (gunicorn) on one database,
a real swtpm device enrolling and attesting over HTTP. The same suite runs on PostgreSQL (two
instances, as on two hosts) and on SQLite (one host, several workers)."""
import base64
import concurrent.futures
import http.client
import json
import subprocess
import threading
import time

import pytest

from verifier_command import cli

APP = "com.example.fleet"
#: How long the load may take to reach the counts a test waits for: generous, since the tests wait
#: for counts, never for a number of seconds (at load 7 on two cores, 3 s gave one enrolment of two).
COUNTS_TIMEOUT = 300
#: What a client sees from an instance killed under it: a refused or reset connection (OSError), or
#: an answer cut off after its headers (http.client.IncompleteRead, which is no OSError).
KILLED = (OSError, http.client.HTTPException)


def wait_for(reached, what: str, load=()) -> None:
    """Wait for `reached`; the threads in `load` make the counts, so one that died fails at once."""
    deadline = time.monotonic() + COUNTS_TIMEOUT
    while not reached():
        assert all(thread.is_alive() for thread in load), f"a load thread died before: {what}"
        assert time.monotonic() < deadline, f"not within {COUNTS_TIMEOUT} s: {what}"
        time.sleep(0.05)


def ok(answer):
    status, _, body = answer
    assert status == 200, body
    return body.decode("utf-8")


def rejected(answer, status, reason):
    got_status, headers, body = answer
    assert (got_status, json.loads(body)["rejected"]) == (status, reason), body
    return json.loads(body), headers


def enrol(machine, at_challenge, at_finish, app_id=APP):
    challenge = ok(at_challenge.post("/v1/enrolment/challenge", machine.device.enrolment_request(app_id)))
    certificate = ok(at_finish.post("/v1/enrolment/finish", machine.device.enrolment_response(challenge)))
    machine.device.accept_ak_certificate(certificate, app_id)
    return certificate


def nonce_of(service):
    return base64.b64decode(json.loads(ok(service.post("/v1/nonce")))["nonce"])


def verification(evidence, nonce, app_id=APP):
    return {"v": 1, "type": "deviceid.verification-request", "evidence": json.loads(evidence),
            "nonce": base64.b64encode(nonce).decode(), "app_id": app_id}


def start_fleet(database_url, services):
    """Two instances on PostgreSQL (as on two hosts), or one instance of four workers on SQLite,
    started by `services` (the fixture's signature)."""
    if database_url.startswith("postgresql"):
        return services(database_url, 2, workers=2)
    one = services(database_url, 1, workers=4)[0]
    return [one, one]


@pytest.fixture
def fleet(database_url, services):
    """start_fleet's instances on the test's database."""
    return start_fleet(database_url, services)


@pytest.fixture
def enrolled(machine_a, fleet):
    a, b = fleet
    enrol(machine_a, a, b)
    return machine_a


def test_a_challenge_made_by_one_instance_is_finished_at_the_other_once(machine_a, fleet):
    a, b = fleet
    challenge = ok(a.post("/v1/enrolment/challenge", machine_a.device.enrolment_request(APP)))
    response = machine_a.device.enrolment_response(challenge)
    certificate = ok(b.post("/v1/enrolment/finish", response))
    assert json.loads(certificate)["type"] == "deviceid.ak-certificate"
    # the same response again is a retry (docs/SERVER-STATE.md, invariant 9): the same certificate, not another
    assert ok(a.post("/v1/enrolment/finish", response)) == certificate
    assert ok(b.post("/v1/enrolment/finish", response)) == certificate
    other = json.dumps({**json.loads(response), "credential": base64.b64encode(bytes(32)).decode()})
    rejected(a.post("/v1/enrolment/finish", other), 403, "challenge-unknown")


def test_a_nonce_issued_by_one_instance_is_accepted_once_at_the_other(enrolled, fleet):
    a, b = fleet
    nonce = nonce_of(a)
    request = verification(enrolled.device.evidence(APP, nonce), nonce)
    result = json.loads(ok(b.post("/v1/attestation/verify", request)))
    assert result["type"] == "deviceid.verification" and result["app_id"] == APP
    assert result["hardware_id"] == json.loads(enrolled.device.evidence(APP, nonce))["hardware_id"]
    assert result["risk"] >= 1
    rejected(a.post("/v1/attestation/verify", request), 403, "nonce-replayed")
    rejected(b.post("/v1/attestation/verify", request), 403, "nonce-replayed")


def test_24_concurrent_submissions_of_one_evidence_accept_exactly_one(enrolled, fleet):
    a, b = fleet
    nonce = nonce_of(b)
    request = json.dumps(verification(enrolled.device.evidence(APP, nonce), nonce))
    barrier = threading.Barrier(24)

    def submit(i):
        barrier.wait()
        return (a if i % 2 else b).post("/v1/attestation/verify", request)

    with concurrent.futures.ThreadPoolExecutor(24) as pool:
        answers = list(pool.map(submit, range(24)))
    statuses = sorted(status for status, _, _ in answers)
    assert statuses == [200] + [403] * 23, [body for _, _, body in answers]
    assert {json.loads(body)["rejected"] for status, _, body in answers if status == 403} == {"nonce-replayed"}


def test_the_enrolment_limit_holds_across_instances_with_retry_after(machine_a, fleet, database_url):
    a, b = fleet
    run_operator("set-limit", "--database", database_url, "--enrolments", "2", "--window", "3600")
    enrol(machine_a, a, b, "com.example.limited")
    enrol(machine_a, b, a, "com.example.limited")
    body, headers = rejected(a.post("/v1/enrolment/challenge", machine_a.device.enrolment_request("com.example.limited")),
                             429, "rate-limited")
    assert 3500 <= int(headers["Retry-After"]) <= 3600 and 3500 <= body["retry_after"] <= 3600
    # another app id of the same TPM has its own window
    enrol(machine_a, b, a, "com.example.other")
    # two challenges made under the limit, finished concurrently at both instances: one passes
    run_operator("set-limit", "--database", database_url, "--enrolments", "4", "--window", "3600")
    first = ok(a.post("/v1/enrolment/challenge", machine_a.device.enrolment_request("com.example.limited")))
    first_response = machine_a.device.enrolment_response(first)
    second = ok(b.post("/v1/enrolment/challenge", machine_a.device.enrolment_request("com.example.limited")))
    second_response = machine_a.device.enrolment_response(second)
    run_operator("set-limit", "--database", database_url, "--enrolments", "3", "--window", "3600")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(lambda pair: pair[0].post("/v1/enrolment/finish", pair[1]),
                                [(a, first_response), (b, second_response)]))
    assert sorted(status for status, _, _ in answers) == [200, 429]


def test_a_revoked_certificate_is_rejected_everywhere_and_listed_in_the_crl(enrolled, fleet, database_url, ca_files,
                                                                            tmp_path):
    a, b = fleet
    nonce = nonce_of(a)
    serial = json.loads(ok(b.post("/v1/attestation/verify",
                                  verification(enrolled.device.evidence(APP, nonce), nonce))))["ak_certificate_serial"]
    assert run_operator("revoke", "--database", database_url, "--serial", serial, "--reason", "key-compromise") \
        == f"revoked {serial}\n"
    for service in (a, b):
        nonce = nonce_of(service)
        body, _ = rejected(service.post("/v1/attestation/verify",
                                        verification(enrolled.device.evidence(APP, nonce), nonce)), 403, "revoked")
        assert "key-compromise" in body["message"]
    # the CRL, served and from the command line, verified by OpenSSL against the CA certificate
    status, headers, der = a.get("/v1/crl")
    assert status == 200 and headers["Content-Type"] == "application/pkix-crl"
    (tmp_path / "crl.der").write_bytes(der)
    check = subprocess.run(["openssl", "crl", "-inform", "DER", "-in", str(tmp_path / "crl.der"), "-CAfile",
                            ca_files[1], "-verify", "-noout", "-text"], capture_output=True, text=True, timeout=30)
    assert check.returncode == 0 and "verify OK" in check.stderr + check.stdout, check.stderr
    assert f"Serial Number: {serial.upper().zfill(len(serial) + len(serial) % 2)}" in check.stdout
    pem = cli("crl", "--database", database_url, "--ca-key", ca_files[0], "--ca-cert", ca_files[1], text=False)
    assert pem.returncode == 0, pem.stderr
    check = subprocess.run(["openssl", "crl", "-CAfile", ca_files[1], "-verify", "-noout"], input=pem.stdout,
                           capture_output=True, timeout=30)
    assert check.returncode == 0 and b"verify OK" in check.stderr + check.stdout


def test_operator_actions_are_not_reachable_over_http(fleet):
    a, _ = fleet
    for path in ("/v1/revoke", "/v1/set-limit", "/v1/limits", "/v1/admin", "/admin", "/v1/migrate", "/v1/crl/revoke"):
        for method in ("GET", "POST", "PUT", "DELETE"):
            status, _, body = a.request(method, path, b'{"serial":"01"}')
            assert status == 404 and json.loads(body)["rejected"] == "malformed", (method, path)
    status, headers, _ = a.request("DELETE", "/v1/crl")
    assert status == 405 and headers["Allow"] == "GET"
    operations = {op["operationId"] for item in json.loads(ok(a.get("/openapi.json")))["paths"].values()
                  for op in item.values()}
    assert operations == {"newNonce", "enrolmentChallenge", "enrolmentFinish", "verifyAttestation", "caCertificate",
                          "certificateRevocationList", "health", "newWebAuthnChallenge", "registerCredential",
                          "verifyAssertion", "writeDeviceBits", "refreshReceipt"}


HOSTILE_BODIES = [b"", b"{", b"[]", b"null", b'{"v":1}', b'{"v":2,"type":"deviceid.enrolment-request"}', b"\xff\xfe",
                  b'{"v":1,"type":"deviceid.enrolment-request","app_id":"a","ek_certificate":"AAAA","ak_public":"AAAA"}',
                  b'{"v":true}', b"1e999999", b"[" * 100_000, b'{"v":1,"type":"deviceid.verification-request",'
                  b'"evidence":{},"nonce":"AAAA"}', b'{"v":1,"type":"deviceid.enrolment-response","id":"x","credential":""}',
                  b'{"v":1,"type":"deviceid.assertion-request","assertion":{"v":1,"type":"deviceid.webauthn-assertion",'
                  b'"credential_id":"AAAA"},"client_data_json":"e30"}',
                  b'{"v":1,"type":"deviceid.webauthn-registration","attestation":[],"client_data_json":"e30"}']


def test_hostile_bodies_get_a_4xx_with_a_reason(fleet):
    a, _ = fleet
    for body in HOSTILE_BODIES:
        for path in ("/v1/enrolment/challenge", "/v1/enrolment/finish", "/v1/attestation/verify",
                     "/v1/webauthn/register", "/v1/assertion/verify", "/v1/device/bits", "/v1/receipt/refresh"):
            status, _, answer = a.post(path, body)
            assert 400 <= status < 500, (path, body[:80], status, answer)
            assert set(json.loads(answer)) >= {"rejected", "message"}


def test_a_body_over_64_kib_is_refused_unread(fleet):
    a, _ = fleet
    rejected(a.post("/v1/attestation/verify", b"x" * (64 * 1024 + 1)), 413, "malformed")


def test_kill_9_of_one_instance_under_load_loses_no_enrolment_and_reuses_no_nonce(machine_a, database_url, services,
                                                                                    machines):
    a, b = services(database_url, 2, workers=2)  # on SQLite: two masters on one file, one host
    machine_b = machines("enrolling")
    enrol(machine_a, a, b)
    accepted = {}        # nonce → how many 200s
    enrolled = []        # app ids whose finish answered 200
    stop = threading.Event()

    def attest():  # machine A: each nonce issued by one instance, submitted to both
        i = 0
        while not stop.is_set():
            i += 1
            issuer, other = (a, b) if i % 2 else (b, a)
            try:
                nonce = nonce_of(issuer)
            except (*KILLED, AssertionError):
                issuer, other = b, a
                nonce = nonce_of(b)
            request = json.dumps(verification(machine_a.device.evidence(APP, nonce), nonce))
            accepted.setdefault(nonce, 0)
            for target in (other, issuer):
                try:
                    if target.post("/v1/attestation/verify", request, timeout=10)[0] == 200:
                        accepted[nonce] += 1
                except KILLED:
                    pass  # the killed instance

    def enrolments():  # machine B: challenges at one instance, finished at the other
        i = 0
        while not stop.is_set():
            i += 1
            app_id = f"com.example.kill{i}"
            try:
                enrol(machine_b, a if i % 2 else b, b if i % 2 else a, app_id)
                enrolled.append(app_id)
            except (*KILLED, AssertionError):
                pass

    threads = [threading.Thread(target=attest), threading.Thread(target=enrolments)]
    for thread in threads:
        thread.start()
    try:  # the kill under load: once both instances served some of each; then the survivor serves on
        wait_for(lambda: len(accepted) >= 4 and len(enrolled) >= 2, "4 nonces and 2 enrolments before the kill",
                 threads)
        a.kill()  # SIGKILL to gunicorn's master and workers at once
        before = sum(accepted.values())
        wait_for(lambda: sum(accepted.values()) >= before + 2, "2 nonces accepted by the survivor after the kill",
                 threads)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
    assert max(accepted.values()) == 1, "a nonce was accepted twice"
    assert sum(accepted.values()) >= len(accepted) - 2  # only nonces in flight at the kill may be lost
    for app_id in enrolled:  # each acknowledged enrolment is on record: the survivor counts it (risk)
        nonce = nonce_of(b)
        result = json.loads(ok(b.post("/v1/attestation/verify",
                                      verification(machine_b.device.evidence(app_id, nonce), nonce, app_id))))
        assert result["risk"] == 1, result


def run_operator(*argv) -> str:
    result = cli(*argv)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_memory_refuses_more_than_one_worker(ca_files, ek_anchors):
    """Issue 51, case 11: `serve --database memory: --workers 2` started, and 15 of 20 fresh
    challenges came back nonce-unknown (each worker had a store of its own). It is a usage error
    now, said before anything listens; one worker is still a trial's way."""
    key, cert = ca_files
    refused = cli("serve", "--database", "memory:", "--workers", "2", "--ca-key", key, "--ca-cert", cert,
                  "--ek-anchor", ek_anchors[0], "--bind", "127.0.0.1:1")
    assert refused.returncode == 2, refused
    assert "--database memory: keeps state in each worker's own memory: with --workers 2" in refused.stderr
    assert refused.stdout == ""



def test_serve_names_the_psycopg_it_reaches_postgresql_through(database_url, services):
    """Which psycopg a worker runs decides a statement's cost (Debian 12's is pure Python: 2–3
    times the CPU of the C implementation the wheel's [postgresql] brings; docs/SERVER.md, "Which
    install, and its speed"): the log says it once the service is ready, on PostgreSQL alone."""
    import psycopg
    [service] = services(database_url, workers=1)
    deadline = time.monotonic() + 30
    while "Booting worker" not in service.output():  # after when_ready, which the master runs first
        assert time.monotonic() < deadline, service.output()
        time.sleep(0.05)
    named = [line.split("] ", 3)[-1] for line in service.output().splitlines() if "PostgreSQL through" in line]
    if database_url.startswith("sqlite"):
        assert named == []
        return
    expected = f"PostgreSQL through psycopg {psycopg.__version__} ({psycopg.pq.__impl__})"
    if psycopg.pq.__impl__ == "python":
        expected += (": the pure-Python implementation, 2–3 times a compiled one's CPU per statement (pip install "
                     "'deviceid-verifier[postgresql]' brings psycopg[binary])")
    assert named == [expected], service.output()
