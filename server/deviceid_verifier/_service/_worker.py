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
enqueue_req(); gunicorn 20.1 (Debian 12) names the keep-alive callback reuse_connection, later
versions on_client_socket_readable: both are this worker's."""

from __future__ import annotations

import collections
import concurrent.futures as futures
import errno
import re
import selectors
import socket
import ssl
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


class BufferingWorker(ThreadWorker):  # type: ignore[misc]  # a base class of unknown type
    """gthread, with every request read whole by the event loop before a thread takes it."""

    def init_process(self) -> None:
        # (deadline, connection) in the order read: all wait REQUEST_TIMEOUT, so that is by deadline;
        # an entry whose connection no longer reads, or reads to another deadline, is stale
        self._reading: Deque[Tuple[float, _Connection]] = collections.deque()
        self._tls: Optional[ssl.SSLContext] = None
        if self.cfg.is_ssl:
            self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._tls.load_cert_chain(self.cfg.certfile, self.cfg.keyfile)
        super().init_process()

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
        """A whole request: to the pool's threads; with one thread, answered here at once. The event
        loop has nothing else to do while the one thread works, and a thread's hand-off (the pool's
        queue, the future's callback, waking the loop) cost a tenth of an assertion's time."""
        if self.cfg.threads > 1:
            super().enqueue_req(conn)
            return
        conn.init()
        done: futures.Future[Tuple[bool, _Connection]] = futures.Future()
        done.conn = conn  # type: ignore[attr-defined]  # what gthread's finish_request reads on a failure
        done.set_result(self.handle(conn))  # handle() answers its own failures
        self.finish_request(done)

    def handle_request(self, req: Any, conn: _Connection) -> bool:
        keepalive: bool = super().handle_request(req, conn)
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
