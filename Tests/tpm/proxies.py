"""Sockets between DeviceID and a swtpm, for the tests that stand in the middle (a TPM restarted or
stopped mid-command, another process's commands interleaved): DeviceID's swtpm TCTI is pointed at
`path`, and each connection to it or to its control socket is handed on with one to the swtpm."""
import socket
import threading


class Listener:
    """Listens at `directory`/proxy.sock and its .ctrl twin; `handle(client, upstream, commands)`
    runs in a thread of its own for each connection (`commands`: the command socket's, not the
    control socket's). close() stops listening."""

    def __init__(self, machine, directory, handle):
        self.path = str(directory / "proxy.sock")
        self.servers = []
        for suffix in ("", ".ctrl"):
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(self.path + suffix)
            server.listen(4)
            self.servers.append(server)
            threading.Thread(target=self._accept, args=(server, str(machine.tpm.socket) + suffix, suffix == "", handle),
                             daemon=True).start()

    @staticmethod
    def _accept(server, target, commands, handle):
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(target)
            except OSError:
                client.close()
                continue
            threading.Thread(target=handle, args=(client, upstream, commands), daemon=True).start()

    def close(self):
        for server in self.servers:
            server.close()


def pump(source, sink, inspect=None):
    """Passes bytes from `source` to `sink` until either closes, then shuts both down. `inspect`
    (data → True, False or None) may stop it early: False drops the data and stops; None keeps it
    and everything after it until `source` closes, saying nothing (a TPM that stopped mid-command)."""
    try:
        while data := source.recv(65536):
            verdict = True if inspect is None else inspect(data)
            if verdict is None:
                while source.recv(65536):
                    pass
            if not verdict:
                break
            sink.sendall(data)
    except OSError:
        pass
    for s in (source, sink):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def both_ways(client, upstream):
    """Each direction pumped in a thread of its own."""
    for a, b in ((client, upstream), (upstream, client)):
        threading.Thread(target=pump, args=(a, b), daemon=True).start()


# -- a TPM that lies: answers read and rewritten frame by frame --------------------------------

TPM2_ST_NO_SESSIONS, TPM2_ST_SESSIONS = 0x8001, 0x8002


def read_frame(sock):
    """One TPM command or response (tag 2, size 4, code 4, then size - 10 bytes, big-endian) from
    `sock`, or None at the end of the connection."""
    data = b""
    while len(data) < 10 or len(data) < int.from_bytes(data[2:6], "big"):
        want = 10 - len(data) if len(data) < 10 else int.from_bytes(data[2:6], "big") - len(data)
        chunk = sock.recv(want)
        if not chunk:
            return None
        data += chunk
    return data


def frame_code(frame):
    """A command's code (TPM_CC), or a response's code (TPM_RC)."""
    return int.from_bytes(frame[6:10], "big")


def frame(tag, code, body=b""):
    """A TPM command or response of `tag`, code and body, its size in its header."""
    return tag.to_bytes(2, "big") + (10 + len(body)).to_bytes(4, "big") + code.to_bytes(4, "big") + body


def cut_short(response, size):
    """`response` cut to `size` bytes, its header saying so: an answer that is whole as far as the
    transport can tell, short of what the command's answer holds."""
    return response[:2] + size.to_bytes(4, "big") + response[6:size]


class RewritingProxy:
    """A TPM that answers what it likes: stands between DeviceID and `machine`'s swtpm, reads each
    command whole, and answers with `answer(command, forward)`, where `forward(command)` sends a
    command (this one, or one rewritten) to the swtpm and returns its response. The control socket
    is passed through. `tcti` is what DeviceID is pointed at; `commands` counts the commands seen
    by code."""

    def __init__(self, machine, directory, answer):
        self.answer, self.commands, self.lock = answer, {}, threading.Lock()
        self.listener = Listener(machine, directory, self.connection)
        self.path = self.listener.path
        self.tcti = f"swtpm:path={self.path}"

    def connection(self, client, upstream, commands):
        if not commands:
            both_ways(client, upstream)
            return

        def forward(command):
            upstream.sendall(command)
            return read_frame(upstream)
        try:
            while (command := read_frame(client)) is not None:
                with self.lock:
                    self.commands[frame_code(command)] = self.commands.get(frame_code(command), 0) + 1
                    seen = self.commands[frame_code(command)]
                reply = self.answer(command, forward, seen)
                if reply is None:
                    break
                client.sendall(reply)
        except OSError:
            pass
        finally:
            for s in (client, upstream):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def close(self):
        self.listener.close()
