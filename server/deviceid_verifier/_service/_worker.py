"""BufferingWorker: gunicorn's threaded worker, but a request reaches a thread only once all of it
has arrived (issue 51, case 3; docs/SERVER.md, "Slow clients").

gunicorn's sync and gthread workers give a connection its thread as soon as it opens, and the
thread then waits for the request line, the headers and the body: four connections trickling a
byte at a time held every sync worker, ten every gthread thread, and a legitimate request waited
39 s. Here the worker's event loop reads every connection without blocking, as nginx's buffering
does in front of gunicorn: the TLS handshake, the head and the body (at most MAX_BODY_BYTES, the
application's own limit) are collected in memory, a connection that has not sent a whole request
within REQUEST_TIMEOUT seconds of its first byte (of its accept, when new) is answered 408 and
closed, and a thread is given a complete request, parsed by gunicorn from those bytes, so it never
waits on the client's sending. Its answer is written with SEND_TIMEOUT for the whole of each
write, so a client that does not read cannot hold the thread either.

This subclasses gthread's ThreadWorker and replaces what happens between accept() and
enqueue_req(), the hand-off to the threads and the event loop: a thread takes a whole request from
a queue, with no future per request, executor semaphore or wait of the loop on those futures (which
cost a worker about 0.15 ms of CPU per request here, against 0.03 ms now), and gunicorn's answer
leaves in one send, its head and body together (_OneSend). With one thread, the event loop answers
a request itself. gunicorn 20.1 (Debian 12) names the keep-alive callback reuse_connection, later
versions on_client_socket_readable: both are this worker's."""

from __future__ import annotations

import collections
import errno
import functools
import queue
import re
import selectors
import socket
import ssl
import threading
import time
from typing import Any, Deque, List, Optional, Tuple

from gunicorn import http  # type: ignore[import]  # gunicorn has no type hints
from gunicorn.workers.gthread import ThreadWorker  # type: ignore[import]

from ._app import MAX_BODY_BYTES

#: Seconds a connection has to send a whole request: from its accept, or from the first byte of
#: a further request on a kept-alive connection.
REQUEST_TIMEOUT = 10.0
#: Seconds each write of an answer may take, in all: a client that does not read is let go.
SEND_TIMEOUT = 10.0
#: Seconds between two heartbeats of a worker to gunicorn's master, which replaces a worker silent
#: for half its timeout (15 s): each is a write to a file's inode, which gthread's loop made on
#: every pass, once per request under load.
HEARTBEAT = 1.0
#: The largest head (request line and headers) buffered; a longer one goes to gunicorn's parser
#: as it is, which refuses it (limit_request_line, limit_request_fields).
MAX_HEAD_BYTES = 64 * 1024

_TIMED_OUT = b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
#: The header by which a client (curl, for a body over 1 KiB) waits for 100 Continue before its body.
_EXPECT_CONTINUE = re.compile(rb"(?im)^expect[ \t]*:[ \t]*100-continue[ \t]*\r\n")


def request_end(buffer: bytes) -> Optional[Tuple[int, bool]]:
    """Where the first request in `buffer` ends and whether all of it is there: None while more is
    to come. A head over MAX_HEAD_BYTES, a body over MAX_BODY_BYTES (refused unread), a
    Content-Length that is no number and a Transfer-Encoding body (which the service does not
    read) end at the head, incomplete: the answer then closes the connection."""
    head_end = buffer.find(b"\r\n\r\n")
    if head_end < 0:
        return (len(buffer), False) if len(buffer) > MAX_HEAD_BYTES else None
    body_start = head_end + 4
    if head_end > MAX_HEAD_BYTES:
        return body_start, False
    length = 0
    for line in buffer[:head_end].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"transfer-encoding":
            return body_start, False
        if name == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                return body_start, False
    if not 0 <= length <= MAX_BODY_BYTES:
        return body_start, False
    end = body_start + length
    return (end, True) if len(buffer) >= end else None


class _Connection:
    """A client connection: what it has sent so far, and until when it may send the rest."""

    def __init__(self, cfg: Any, sock: socket.socket, client: Any, server: Any) -> None:
        self.cfg = cfg
        self.sock = sock
        self.client = client
        self.server = server
        self.timeout: Optional[float] = None  # gthread's keep-alive deadline (time.time())
        self.parser: Any = None
        self.initialized = True  # gunicorn 21+: a connection that came back from keep-alive
        self.buffer = b""
        self.deadline = 0.0
        self.reading = False
        self.handshaking = isinstance(sock, ssl.SSLSocket)
        self.whole = True  # whether the request handed to a thread arrived whole, with nothing after it
        self.continued = False  # whether this request was answered 100 Continue
        sock.setblocking(False)

    def take_request(self, end: int, whole: bool) -> None:
        request, self.buffer = self.buffer[:end], self.buffer[end:]
        self.whole = whole and not self.buffer  # a pipelined request after it: answered after a reconnect
        if self.continued:  # once is enough: gunicorn would say it again
            self.continued = False
            head_end = request.find(b"\r\n\r\n") + 2
            request = _EXPECT_CONTINUE.sub(b"", request[:head_end], count=1) + request[head_end:]
        self.parser = http.RequestParser(self.cfg, [request], self.client)

    def continue_if_expected(self) -> None:
        """A client that sent `Expect: 100-continue` waits for 100 Continue before its body."""
        head_end = self.buffer.find(b"\r\n\r\n")
        if not self.continued and head_end >= 0 and _EXPECT_CONTINUE.search(self.buffer[:head_end + 2]):
            self.continued = True
            try:
                self.sock.send(_CONTINUE)  # 25 bytes into an empty send buffer
            except (OSError, ssl.SSLError):
                pass

    def init(self) -> None:
        """gthread's hook before the thread runs: the thread writes, with a deadline, and reads
        nothing from the socket."""
        self.sock.settimeout(SEND_TIMEOUT)

    def set_timeout(self) -> None:
        self.timeout = time.time() + self.cfg.keepalive

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class _OneSend:
    """A connection's socket while gunicorn writes an answer: the head, which it writes apart,
    goes out with the body's first write, so that the client reads one segment and is woken once
    (and the worker makes one send) instead of two. Every other use of the socket sends what is
    held first."""

    #: A body write at least this long is sent apart, after the head, rather than copied behind it.
    JOIN_BYTES = 64 * 1024

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._head: Optional[bytes] = None
        self._first = True

    def sendall(self, data: bytes) -> None:
        if self._first:
            self._first = False
            self._head = bytes(data)
            return
        head, self._head = self._head, None
        if head and len(data) < self.JOIN_BYTES:
            self._sock.sendall(head + data)
            return
        if head:
            self._sock.sendall(head)
        self._sock.sendall(data)

    def flush(self) -> None:
        head, self._head = self._head, None
        if head:
            self._sock.sendall(head)

    def __getattr__(self, name: str) -> Any:
        self.flush()
        return getattr(self._sock, name)


class _Threads:
    """The worker's threads beyond its event loop's: each takes whole requests from a queue and
    answers them. What gthread's ThreadPoolExecutor did, without a future per request, the
    executor's semaphore or the event loop's wait on those futures."""

    def __init__(self, count: int, answer: Any) -> None:
        self.requests: "queue.SimpleQueue[Optional[_Connection]]" = queue.SimpleQueue()
        self._answer = answer
        self._threads = [threading.Thread(target=self._run, name=f"deviceid-request-{n}", daemon=True)
                         for n in range(count)]
        for thread in self._threads:
            thread.start()

    def _run(self) -> None:
        while True:
            conn = self.requests.get()
            if conn is None:
                return
            self._answer(conn)

    def shutdown(self, wait: bool = True, timeout: Optional[float] = None) -> None:
        """Each thread ends once the requests queued before this are answered; `wait`: until
        then, or `timeout` seconds in all."""
        for _ in self._threads:
            self.requests.put(None)
        if wait:
            end = None if timeout is None else time.monotonic() + timeout
            for thread in self._threads:
                thread.join(None if end is None else max(0.0, end - time.monotonic()))


class BufferingWorker(ThreadWorker):  # type: ignore[misc]  # a base class of unknown type
    """gthread, with every request read whole by the event loop before a thread takes it."""

    _next_beat = 0.0  # time.monotonic() of the next heartbeat

    def init_process(self) -> None:
        # (deadline, connection) in the order read: all wait REQUEST_TIMEOUT, so that is by deadline;
        # an entry whose connection no longer reads, or reads to another deadline, is stale
        self._reading: Deque[Tuple[float, _Connection]] = collections.deque()
        self._tls: Optional[ssl.SSLContext] = None
        if self.cfg.is_ssl:
            self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._tls.load_cert_chain(self.cfg.certfile, self.cfg.keyfile)
        self._answered = threading.Event()  # set by a thread that answered, for a loop at its connection limit
        super().init_process()

    def notify(self) -> None:
        """gunicorn's heartbeat, at most once per HEARTBEAT seconds."""
        now = time.monotonic()
        if now >= self._next_beat:
            self._next_beat = now + HEARTBEAT
            super().notify()

    def get_thread_pool(self) -> Optional[_Threads]:
        return _Threads(self.cfg.threads, self._answer) if self.cfg.threads > 1 else None

    def handle_quit(self, sig: Any, frame: Any) -> None:
        self.alive = False
        self.cfg.worker_int(self)
        if self.tpool is not None:
            self.tpool.shutdown(False)
        time.sleep(0.1)
        raise SystemExit(0)

    def run(self) -> None:
        """gthread's event loop, but without futures: at its connection limit it waits for a
        thread to answer something (or a second, for the keep-alive and request deadlines)."""
        for sock in self.sockets:
            sock.setblocking(False)
            self.poller.register(sock, selectors.EVENT_READ, functools.partial(self.accept, sock.getsockname()))
        while self.alive:
            self.notify()
            if self.nr_conns < self.worker_connections:
                for key, _ in self.poller.select(1.0):
                    key.data(key.fileobj)
            else:
                self._answered.wait(1.0)
                self._answered.clear()
            if not self.is_parent_alive():
                break
            self.murder_keepalived()
        if self.tpool is not None:
            self.log.info("Worker stopping: its threads finish the requests they have (at most %g s)",
                          self.cfg.graceful_timeout)
            self.tpool.shutdown(True, self.cfg.graceful_timeout)
        self.poller.close()
        for sock in self.sockets:
            sock.close()

    def accept(self, server: Any, listener: socket.socket) -> None:
        try:
            sock, client = listener.accept()
        except OSError as e:
            if e.errno in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                return
            raise
        if self._tls is not None:
            sock = self._tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        self.nr_conns += 1
        self._read_request(_Connection(self.cfg, sock, client, server))

    def reuse_connection(self, conn: _Connection, client: socket.socket) -> None:
        """A kept-alive connection sent something: buffer its next request."""
        with self._lock:
            self.poller.unregister(client)
            try:
                self._keep.remove(conn)
            except ValueError:
                return  # murder_keepalived closed it meanwhile
        self._read_request(conn)

    on_client_socket_readable = reuse_connection

    def _read_request(self, conn: _Connection) -> None:
        conn.deadline = time.monotonic() + REQUEST_TIMEOUT
        conn.reading = True
        self._reading.append((conn.deadline, conn))
        with self._lock:
            self.poller.register(conn.sock, selectors.EVENT_READ, lambda _: self._readable(conn))
        self._readable(conn)

    def _readable(self, conn: _Connection) -> None:
        try:
            if conn.handshaking:
                conn.sock.do_handshake()  # type: ignore[attr-defined]  # an SSLSocket
                conn.handshaking = False
            while len(conn.buffer) <= MAX_HEAD_BYTES + MAX_BODY_BYTES:
                data = conn.sock.recv(65536)
                if not data:
                    self._drop(conn)  # the client left
                    return
                conn.buffer += data
        except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            pass
        except OSError:  # reset, or a TLS handshake that failed
            self._drop(conn)
            return
        end = request_end(conn.buffer)
        if end is None:
            conn.continue_if_expected()
            return
        self._stop_reading(conn)
        conn.take_request(*end)
        self.enqueue_req(conn)

    def _stop_reading(self, conn: _Connection) -> None:
        conn.reading = False
        with self._lock:
            try:
                self.poller.unregister(conn.sock)
            except (KeyError, ValueError, OSError):
                pass

    def _drop(self, conn: _Connection) -> None:
        self._stop_reading(conn)
        self.nr_conns -= 1
        conn.close()

    def enqueue_req(self, conn: _Connection) -> None:
        """A whole request: to the threads' queue; with one thread, answered here at once (the event
        loop has nothing else to do while the one thread works)."""
        conn.init()
        if self.tpool is None:
            self._answer(conn)
        else:
            self.tpool.requests.put(conn)

    def _answer(self, conn: _Connection) -> None:
        """Answer a whole request; then keep its connection for the next, or close it (gthread's
        finish_request)."""
        keepalive = False
        try:
            keepalive = self.handle(conn)[0]  # handle() answers its own failures
        finally:
            if keepalive and self.alive:
                conn.sock.setblocking(False)
                conn.set_timeout()
                with self._lock:
                    self._keep.append(conn)
                    self.poller.register(conn.sock, selectors.EVENT_READ,
                                         functools.partial(self.reuse_connection, conn))
            else:
                self.nr_conns -= 1
                conn.close()
            self._answered.set()

    def handle_request(self, req: Any, conn: _Connection) -> bool:
        sock = conn.sock
        writer = _OneSend(sock)
        conn.sock = writer  # type: ignore[assignment]  # what gunicorn writes the answer through
        try:
            keepalive: bool = super().handle_request(req, conn)
            writer.flush()
        finally:
            conn.sock = sock
        return keepalive and conn.whole

    def murder_keepalived(self) -> None:
        super().murder_keepalived()
        now = time.monotonic()
        overdue: List[_Connection] = []
        while self._reading and self._reading[0][0] <= now:
            deadline, conn = self._reading.popleft()
            if conn.reading and conn.deadline == deadline:
                overdue.append(conn)
        for conn in overdue:
            if not conn.handshaking:
                try:
                    conn.sock.send(_TIMED_OUT)
                except (OSError, ssl.SSLError):
                    pass
            self.log.info("%s sent no whole request within %g s: closed", conn.client, REQUEST_TIMEOUT)
            self._drop(conn)
