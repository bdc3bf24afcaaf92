"""A database that stops answering is 503 with Retry-After within the bound docs/SERVER.md
("Faults") promises, and the service recovers when it answers again (issue 51, case 4): every
process of a PostgreSQL of the test's own is SIGSTOPped, so its kernel still completes handshakes
and acknowledges what is sent, and only a deadline of the client's own can end a request."""
import os
import signal
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from postgres import PostgreSQL
from verifier_command import SERVER  # noqa: F401  (server/ on sys.path)
from deviceid_verifier._store._postgres import SILENT_RETRY

#: docs/SERVER.md, "Faults": a request meeting a silent database is answered within this.
BOUND = 5.0


@pytest.fixture(scope="module")
def stoppable_postgresql():
    """A cluster of this module's own: stopping it stops no other test's database."""
    server = PostgreSQL()
    yield server
    server.stop()


def timed_post(url: str):
    """(status, Retry-After, seconds) of POST url; status None when no answer came in 15 s."""
    started = time.monotonic()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=b"", method="POST"), timeout=15) as response:
            status, retry_after = response.status, response.headers.get("Retry-After")
    except urllib.error.HTTPError as e:
        status, retry_after = e.code, e.headers.get("Retry-After")
    except OSError:  # no answer within the client's patience
        status, retry_after = None, None
    return status, retry_after, round(time.monotonic() - started, 2)


@pytest.mark.parametrize("workers, threads", [(2, 1), (2, 4)])
def test_a_stopped_database_is_503_with_retry_after_within_the_bound_and_recovers(stoppable_postgresql, services,
                                                                                 workers, threads):
    [service] = services(stoppable_postgresql.new_database(), workers=workers, extra=["--threads", str(threads)])
    # Twice as many requests at once as the service has threads: those queued behind one that
    # meets the silent database must not each wait out a deadline of their own.
    concurrency = 2 * workers * threads
    with ThreadPoolExecutor(concurrency) as pool:
        warm = list(pool.map(timed_post, [service.url + "/v1/nonce"] * 4 * concurrency))
        assert {status for status, _, _ in warm} == {200}, str(warm)

        stopped = stoppable_postgresql.processes()
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
        try:
            # on the connections the threads hold; at once after (the process knows the database
            # silent); and once that has passed, when one operation of each process tries again
            for pause in (0, 0, SILENT_RETRY):
                time.sleep(pause)  # the time the service waits before trying again: a setting, not a wait for it
                answers = list(pool.map(timed_post, [service.url + "/v1/nonce"] * concurrency))
                assert all(status == 503 and retry_after == "1" and seconds < BOUND
                           for status, retry_after, seconds in answers), str(answers)
        finally:
            for pid in stopped:
                os.kill(pid, signal.SIGCONT)

    # the same service answers again, without a restart; nothing on the way was a 500
    deadline = time.monotonic() + 30
    seen = []
    while True:
        status, _, _ = timed_post(service.url + "/v1/nonce")
        seen.append(status)
        if status == 200:
            break
        assert status == 503 and time.monotonic() < deadline, seen
        time.sleep(0.1)
    assert service.process.poll() is None
    assert [timed_post(service.url + "/v1/nonce")[0] for _ in range(2 * concurrency)] == [200] * 2 * concurrency
