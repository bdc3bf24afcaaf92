"""Deadlines: a database that stops answering must not hold a request (issue 51, case 4).

A stopped PostgreSQL (SIGSTOP, a hung host, a frozen VM) keeps its sockets: the kernel still
completes handshakes and acknowledges what is sent, so TCP keepalives and tcp_user_timeout never
fire, and the server's own statement_timeout cannot run. Only the client can give up. psycopg's
wait loops have no deadline, so a Watchdog thread per process keeps one for each operation in
progress and, once it has passed, shuts the operation's socket down (shutdown(2) on a duplicate of
the descriptor): libpq then reads the end of the stream at once and psycopg raises
OperationalError in the thread that waited, which the store reports as unavailable (503). The
descriptor stays the connection's to close; the watchdog only ends the stream under it, and only
while the operation is still registered, so an operation that finished in time is never cut."""

from __future__ import annotations

import contextlib
import math
import os
import socket
import threading
import time
from typing import Dict, Iterator, Optional, Tuple


class Watchdog:
    """Cuts the socket of an operation that overran its deadline. One thread per process, started
    on first use and again in a forked child (threads do not survive fork())."""

    def __init__(self) -> None:
        self._pid: Optional[int] = None
        self._watch = _Watch()
        self._starting = threading.Lock()

    @contextlib.contextmanager
    def guard(self, fd: int, seconds: float) -> Iterator[None]:
        """Within the block, the socket `fd` is shut down once `seconds` have passed."""
        if self._pid != os.getpid():
            with self._starting:
                if self._pid != os.getpid():
                    # a child of fork() inherits the parent's entries and perhaps a held lock, but no
                    # thread; the pid goes last, so no other thread takes the inherited watch for this one
                    self._watch = _Watch()
                    threading.Thread(target=self._watch.run, name="deviceid-deadlines", daemon=True).start()
                    self._pid = os.getpid()
        watch = self._watch
        token = object()
        deadline = time.monotonic() + seconds
        with watch.condition:
            watch.running[token] = (deadline, fd)
            if deadline < watch.wakes_at:
                watch.condition.notify()
        try:
            yield
        finally:
            with watch.condition:
                watch.running.pop(token, None)


class _Watch:
    """The operations in progress in one process, by deadline, and the thread's wait."""

    def __init__(self) -> None:
        self.condition = threading.Condition()
        self.running: Dict[object, Tuple[float, int]] = {}
        self.wakes_at = math.inf

    def run(self) -> None:
        with self.condition:
            while True:
                now = time.monotonic()
                for token, (deadline, fd) in list(self.running.items()):
                    if deadline <= now:
                        del self.running[token]
                        _cut(fd)
                self.wakes_at = min((deadline for deadline, _ in self.running.values()), default=math.inf)
                self.condition.wait(None if self.wakes_at == math.inf else self.wakes_at - now)


def _cut(fd: int) -> None:
    try:
        duplicate = socket.socket(fileno=os.dup(fd))
    except OSError:
        return  # closed already: nothing waits on it
    with duplicate:
        with contextlib.suppress(OSError):
            duplicate.shutdown(socket.SHUT_RDWR)
