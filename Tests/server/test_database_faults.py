"""A database that stops answering is 503 with Retry-After within the bound docs/SERVER.md
("Faults") promises, and the service recovers when it answers again (issue 51, case 4): every
process of a PostgreSQL of the test's own is SIGSTOPped, so its kernel still completes handshakes
and acknowledges what is sent, and only a deadline of the client's own can end a request. And
every connection carries the server's timeouts and TCP keepalives."""
import os
import signal
import socket
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

    # the same service answers again, without a restart (each worker once its own next try has
    # found the database back); nothing on the way was a 500
    deadline = time.monotonic() + 30
    seen = []
    while seen[-2 * concurrency:] != [200] * 2 * concurrency:
        status, _, _ = timed_post(service.url + "/v1/nonce")
        seen.append(status)
        assert status in (200, 503) and time.monotonic() < deadline, seen
        if status == 503:
            time.sleep(0.1)  # a client's pause before it tries again
    assert service.process.poll() is None

def test_every_connection_carries_the_timeouts_and_keepalives(stoppable_postgresql):
    """docs/SERVER.md, "Faults": the server's timeouts set on the session, libpq's TCP options on
    its socket; what the URL sets itself is the operator's and holds."""
    from deviceid_verifier._store import open_store

    def settings(url):
        store = open_store(url)
        connection = store._connection()
        shown = [connection.execute(f"SHOW {name}").fetchone()[0]
                 for name in ("statement_timeout", "idle_in_transaction_session_timeout")]
        with socket.socket(fileno=os.dup(connection.fileno())) as sock:
            options = [sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE)] + [
                sock.getsockopt(socket.IPPROTO_TCP, option) for option in
                (socket.TCP_KEEPIDLE, socket.TCP_KEEPINTVL, socket.TCP_KEEPCNT, socket.TCP_USER_TIMEOUT)]
        store.close()
        return shown, options

    url = stoppable_postgresql.new_database()
    assert settings(url) == (["2500ms", "10s"], [1, 10, 5, 3, 9000])
    assert settings(url + "?keepalives_idle=60&tcp_user_timeout=20000") == (["2500ms", "10s"], [1, 60, 5, 3, 20000])


def test_a_statement_waiting_on_a_lock_is_cancelled_by_the_server_and_503(stoppable_postgresql, services):
    """A statement that waits (here for a table another session holds locked) is cancelled by
    the server's statement_timeout: 503 with Retry-After, and no silence assumed of a database
    that answered: the next request, the lock gone, is 200 at once."""
    import psycopg
    url = stoppable_postgresql.new_database()
    [service] = services(url, workers=1)
    assert timed_post(service.url + "/v1/nonce")[0] == 200
    with psycopg.connect(url) as holder:
        holder.execute("LOCK TABLE nonces IN ACCESS EXCLUSIVE MODE")
        status, retry_after, seconds = timed_post(service.url + "/v1/nonce")
        assert (status, retry_after) == (503, "1") and seconds < BOUND, (status, retry_after, seconds)
    assert timed_post(service.url + "/v1/nonce")[0] == 200
