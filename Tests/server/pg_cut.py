"""A TCP proxy in front of PostgreSQL that loses one COMMIT's acknowledgement: the fault of a
connection that breaks after the database committed and before the client heard it (a restart,
a failover, a network cut at that instant). PostgreSQL alone cannot be made to fail there on
purpose; between the two, the proxy can: it reads the server's messages (type byte, 32-bit
length: the PostgreSQL protocol's framing) and, once armed, withholds the answer that ends the
first transaction that sent the armed statement — its last messages up to the ReadyForQuery that
says the session is idle again, sent only once it committed: after a COMMIT, or after a
statement run as a transaction of its own (autocommit) — and closes both ends."""
import socket
import threading

#: Disable what would make the server's first bytes anything but framed messages (SSL and GSS
#: negotiation answer with one bare byte).
PLAIN = "sslmode=disable&gssencmode=disable"


class CommitCutter:
    """Listens on 127.0.0.1:port and forwards to the server at `port_of_server`."""

    def __init__(self, port_of_server: int) -> None:
        self._server = ("127.0.0.1", port_of_server)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._marker = None
        self._lock = threading.Lock()
        #: set once an acknowledgement was withheld
        self.cut = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, database_url: str) -> str:
        """`database_url` (postgresql://user@127.0.0.1:PORT/db) through the proxy."""
        head, database = database_url.rsplit("/", 1)
        return f"{head.rsplit(':', 1)[0]}:{self.port}/{database}?{PLAIN}"

    def arm(self, marker: bytes) -> None:
        """Cut the connection at the commit of the next transaction whose statements include `marker`."""
        with self._lock:
            self._marker = marker
            self.cut.clear()

    def close(self) -> None:
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self._server)
            connection = {"armed": False}
            threading.Thread(target=self._from_client, args=(client, server, connection), daemon=True).start()
            threading.Thread(target=self._from_server, args=(server, client, connection), daemon=True).start()

    def _from_client(self, client: socket.socket, server: socket.socket, connection: dict) -> None:
        tail = b""
        while True:
            try:
                data = client.recv(65536)
                if not data:
                    break
                seen = tail + data
                with self._lock:
                    if self._marker is not None and self._marker in seen:
                        connection["armed"] = True
                        self._marker = None
                    tail = seen[-256:]
                server.sendall(data)
            except OSError:
                break
        _close(client, server)

    def _from_server(self, server: socket.socket, client: socket.socket, connection: dict) -> None:
        pending, held = b"", b""  # held, once armed: the messages since the last ReadyForQuery, forwarded with it
        while True:
            try:
                data = server.recv(65536)
            except OSError:
                break
            if not data:
                break
            pending += data
            out = b""
            while len(pending) >= 5:
                end = 1 + int.from_bytes(pending[1:5], "big")
                if len(pending) < end:
                    break
                message, pending = pending[:end], pending[end:]
                if not connection["armed"]:
                    out += message
                    continue
                held += message
                if message[:1] != b"Z":
                    continue
                # ReadyForQuery: its status byte says idle (I) once the transaction ended
                if message[5:6] == b"I":
                    self.cut.set()  # before the client can see the cut, and answer
                    _close(client, server)
                    return
                out, held = out + held, b""
            try:
                client.sendall(out)
            except OSError:
                break
        _close(client, server)


def _close(*sockets: socket.socket) -> None:
    for s in sockets:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()
