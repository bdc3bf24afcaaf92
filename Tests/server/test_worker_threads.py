"""serve's worker (deviceid_verifier._service._worker.BufferingWorker) as it answers: by default a
worker answers another request while one waits on the database (its commit, or a lock), and an
answer leaves in one send, its head and body together (docs/SERVER.md, "Which install, and its
speed")."""
import contextlib
import os
import signal
import threading
import time
import types

import psycopg
from gunicorn.config import Config
from gunicorn.http import RequestParser
from gunicorn.http.wsgi import Response

from verifier_command import SERVER  # noqa: F401  (server/ on sys.path)
from deviceid_verifier._service._worker import _OneSend

TIMEOUT = 30


def _await(condition, what):
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


@contextlib.contextmanager
def _a_nonce_waiting_on_its_table(database, service):
    """A POST /v1/nonce in flight whose statement waits on a lock held here; yields the dict its
    answer lands in, once the lock ends with the holding transaction (on leaving)."""
    waiting = {}
    with psycopg.connect(database) as holder:
        # a nonce cannot be written while this transaction holds the table
        holder.execute("LOCK TABLE nonces IN ACCESS EXCLUSIVE MODE")
        nonce = threading.Thread(target=lambda: waiting.update(answer=service.post("/v1/nonce")))
        nonce.start()
        with psycopg.connect(database, autocommit=True) as watcher:
            _await(lambda: watcher.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                           "AND query LIKE '%nonces%'").fetchone()[0] == 1,
                   "the nonce's statement never waited for the lock")
        yield waiting
    nonce.join(TIMEOUT)


def test_a_worker_answers_while_another_request_waits_on_the_database(postgresql, services):
    database = postgresql.new_database()
    [service] = services(database, workers=1)  # serve's default threads
    with _a_nonce_waiting_on_its_table(database, service) as waiting:
        status, _, pem = service.get("/v1/ca-certificate")
        assert (status, pem.startswith(b"-----BEGIN CERTIFICATE-----")) == (200, True)
        assert "answer" not in waiting, "answered while its table was still locked"
    assert waiting["answer"][0] == 200  # the lock ended with the transaction: the nonce was issued


def test_a_worker_told_to_stop_answers_the_request_it_has_first(postgresql, services):
    """SIGTERM (systemd's stop): the worker stops taking requests and its threads finish theirs
    (gunicorn's graceful timeout, 10 s) before it exits."""
    database = postgresql.new_database()
    [service] = services(database, workers=1)
    with _a_nonce_waiting_on_its_table(database, service) as waiting:
        service.process.send_signal(signal.SIGTERM)
        _await(lambda: "Worker stopping" in service.output(), "the worker did not stop its event loop")
        assert "answer" not in waiting
    assert waiting["answer"][0] == 200
    assert service.process.wait(TIMEOUT) == 0


class _Sends:
    """A socket's stand-in that keeps what each sendall() sent."""

    def __init__(self) -> None:
        self.sent = []

    def sendall(self, data: bytes) -> None:
        self.sent.append(bytes(data))

    def fileno(self) -> int:
        return -1


def _answer(body: bytes):
    """What gunicorn's Response sends for a 200 of `body`, written through a _OneSend: the sends."""
    sends = _Sends()
    writer = _OneSend(sends)
    request = next(RequestParser(Config(), [b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"], ("127.0.0.1", 1)))
    response = Response(request, writer, Config())
    response.start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    response.write(body)
    response.close()
    writer.flush()
    return sends.sent


def test_an_answer_leaves_in_one_send():
    [sent] = _answer(b'{"v":1}')
    assert sent.startswith(b"HTTP/1.1 200 OK\r\n") and sent.endswith(b"\r\n\r\n{\"v\":1}")


def test_a_long_body_follows_its_head_uncopied():
    body = b"x" * _OneSend.JOIN_BYTES
    head, sent = _answer(body)
    assert (head.startswith(b"HTTP/1.1 200 OK\r\n"), head.endswith(b"\r\n\r\n"), sent) == (True, True, body)


def test_any_other_use_of_the_socket_sends_the_head_first():
    sends = _Sends()
    writer = _OneSend(sends)
    writer.sendall(b"HTTP/1.1 200 OK\r\n\r\n")
    assert sends.sent == []
    assert writer.fileno() == -1  # e.g. gunicorn's sendfile
    assert sends.sent == [b"HTTP/1.1 200 OK\r\n\r\n"]



def test_a_busy_worker_beats_once_a_second_not_once_a_request(monkeypatch):
    """gunicorn's heartbeat (a write to a file's inode) at most once per HEARTBEAT, however often
    the event loop passes: gthread's loop beat once per request."""
    from deviceid_verifier._service import _worker
    beats = []
    worker = _worker.BufferingWorker(0, os.getpid(), [], None, 30, Config(), None)
    monkeypatch.setattr(worker.tmp, "notify", lambda: beats.append(clock[0]))
    clock = [1000.0]
    monkeypatch.setattr(_worker, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    for _ in range(3):
        for _ in range(100):  # a hundred passes of the loop within one heartbeat's interval
            worker.notify()
            clock[0] += _worker.HEARTBEAT / 200
        clock[0] += _worker.HEARTBEAT / 2
    assert len(beats) == 3 and all(later - earlier >= _worker.HEARTBEAT for earlier, later in zip(beats, beats[1:]))
