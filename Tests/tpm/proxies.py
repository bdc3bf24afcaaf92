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
