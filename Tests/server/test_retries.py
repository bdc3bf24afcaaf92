"""Issue 51, case 7: a 503 is safe to retry. A service (gunicorn) on PostgreSQL is failed at the
two instants that matter (docs/SERVER-STATE.md, invariants 4 and 9), and the identical retry
must get the answer the first request would have had, with nothing counted that the client was
not given:

- before the spending commits: its backend terminated (pg_terminate_backend) while it waits for
  a lock another session holds, a real fault at a chosen statement;
- after the database committed, before the service heard it: the COMMIT's acknowledgement lost
  (pg_cut.CommitCutter, a proxy on the connection; the one instant PostgreSQL alone cannot be
  made to fail at, while a connection cut there is what a restart or a failover does)."""
import base64
import json
import os
import threading
import time

import psycopg
import pytest
from cryptography import x509

from pg_cut import CommitCutter
from test_service import enrol, ok, rejected, verification

APP = "com.example.retries"
TIMEOUT = 60


@pytest.fixture
def database(postgresql):
    return postgresql.new_database()


@pytest.fixture
def cutter(postgresql):
    proxy = CommitCutter(postgresql.port)
    yield proxy
    proxy.close()


def query(url, sql, params=()):
    with psycopg.connect(url, autocommit=True) as connection:
        return connection.execute(sql, params).fetchall()


def unavailable(answer):
    status, headers, body = answer
    assert (status, headers.get("Retry-After"), json.loads(body)["error"]) == (503, "1", "unavailable"), body


def nonce_of(service, app_id=None):
    body = {} if app_id is None else {"app_id": app_id}
    return base64.b64decode(json.loads(ok(service.post("/v1/nonce", body)))["nonce"])


def test_a_fault_before_the_spending_commits_leaves_the_nonce_for_the_retry(machine_a, services, database):
    """The issue's case: the backend terminated in the middle of a verification answered 503, and
    the identical retry was nonce-replayed (1.0 spent the nonce in a transaction of its own first)."""
    [service] = services(database, 1, workers=1)
    enrol(machine_a, service, service, APP)
    nonce = nonce_of(service)
    request = json.dumps(verification(machine_a.device.evidence(APP, nonce), nonce, APP))

    with psycopg.connect(database) as locker:  # the certificates table locked: the verifier's read waits
        locker.execute("LOCK TABLE certificates IN ACCESS EXCLUSIVE MODE")
        answers = []
        worker = threading.Thread(target=lambda: answers.append(service.post("/v1/attestation/verify", request)))
        worker.start()
        deadline = time.monotonic() + TIMEOUT
        while not (waiting := query(database, "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                                              "AND wait_event_type = 'Lock'")):
            assert time.monotonic() < deadline and worker.is_alive(), "the verification never waited for the lock"
            time.sleep(0.01)
        query(database, "SELECT pg_terminate_backend(%s)", (waiting[0][0],))
        worker.join(TIMEOUT)
    unavailable(answers[0])

    first = json.loads(ok(service.post("/v1/attestation/verify", request)))
    assert first["app_id"] == APP and first["risk"] == 1
    rejected(service.post("/v1/attestation/verify", request), 403, "nonce-replayed")


def test_an_enrolment_whose_commit_was_not_heard_gets_its_certificate_on_the_retry(machine_a, services, database,
                                                                                  cutter):
    """The issue's restart case: an enrolment answered 503 had its certificate committed; it
    counted toward the limit and the risk figure, and the device never got it (the retry was
    challenge-unknown). Now the retry gets that certificate, and it is counted once."""
    [service] = services(cutter.url(database), 1, workers=1)
    challenge = ok(service.post("/v1/enrolment/challenge", machine_a.device.enrolment_request(APP)))
    response = machine_a.device.enrolment_response(challenge)

    cutter.arm(b"INSERT INTO certificates")
    unavailable(service.post("/v1/enrolment/finish", response))
    assert cutter.cut.is_set()
    [(serial,)] = query(database, "SELECT serial FROM certificates")  # the database did commit it

    certificate = ok(service.post("/v1/enrolment/finish", response))
    machine_a.device.accept_ak_certificate(certificate, APP)
    der = base64.b64decode(json.loads(certificate)["certificate"])
    assert format(x509.load_der_x509_certificate(der).serial_number, "x") == serial  # the one committed
    assert query(database, "SELECT count(*) FROM certificates") == [(1,)]
    assert ok(service.post("/v1/enrolment/finish", response)) == certificate  # and again, the same

    nonce = nonce_of(service)
    verified = json.loads(ok(service.post("/v1/attestation/verify",
                                          verification(machine_a.device.evidence(APP, nonce), nonce, APP))))
    assert verified["risk"] == 1  # one enrolment given, one counted


def test_a_verification_whose_commit_was_not_heard_is_answered_again_for_its_request_id(machine_a, services, database,
                                                                                      cutter):
    [service] = services(cutter.url(database), 1, workers=1)
    enrol(machine_a, service, service, APP)

    nonce = nonce_of(service, APP)
    request = {**verification(machine_a.device.evidence(APP, nonce), nonce, APP), "request_id": "app-server-7f3a"}
    cutter.arm(b"UPDATE nonces SET used")
    unavailable(service.post("/v1/attestation/verify", request))
    assert cutter.cut.is_set()
    assert query(database, "SELECT used FROM nonces WHERE nonce = %s", (nonce,)) == [(True,)]  # committed
    first = json.loads(ok(service.post("/v1/attestation/verify", request)))
    assert first["app_id"] == APP and first["risk"] == 1
    assert json.loads(ok(service.post("/v1/attestation/verify", request))) == first
    # another request id is another request: the nonce is spent
    rejected(service.post("/v1/attestation/verify", {**request, "request_id": "app-server-9c01"}), 403,
             "nonce-replayed")

    # without a request id, an identical body may be a replay of the device's message: not answered again
    nonce = nonce_of(service, APP)
    plain = verification(machine_a.device.evidence(APP, nonce), nonce, APP)
    cutter.arm(b"UPDATE nonces SET used")
    unavailable(service.post("/v1/attestation/verify", plain))
    rejected(service.post("/v1/attestation/verify", plain), 403, "nonce-replayed")


def test_an_assertion_whose_commit_was_not_heard_is_answered_again_and_counted_once(machines, services, database,
                                                                                   cutter, tmp_path):
    """An assertion's counter committed, its acknowledgement lost: the retry with its request_id
    is accepted with that counter, and the credential carries no mark of a counter that did not
    rise (1.0: nonce-replayed; a retry that re-ran the counter rule would mark a clone)."""
    from test_webauthn_service import assertion, enrol as enrol_with_the_command, registration
    app = "com.example.retries-attest"
    machine = machines(f"retries-{os.urandom(3).hex()}")
    [service] = services(cutter.url(database), 1, workers=1)
    certificate = enrol_with_the_command(machine, service, service, app)
    ok(service.post("/v1/webauthn/register", registration(machine, service, app, certificate, tmp_path)))

    request = {**assertion(machine, service, app), "request_id": "app-server-assert-1"}
    counter = request["assertion"]["counter"]
    cutter.arm(b"UPDATE credentials SET counter")
    unavailable(service.post("/v1/assertion/verify", request))
    assert cutter.cut.is_set()
    assert query(database, "SELECT counter, counter_failed FROM credentials") == [(counter, None)]  # committed
    answer = json.loads(ok(service.post("/v1/assertion/verify", request)))
    assert answer["counter"] == counter and "counter_failed" not in answer
    later = json.loads(ok(service.post("/v1/assertion/verify", assertion(machine, service, app))))
    assert later["counter"] == counter + 1 and "counter_failed" not in later
    assert query(database, "SELECT counter_failed FROM credentials") == [(None,)]
    machine.tpm.stop()
