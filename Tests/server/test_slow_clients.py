"""Slow clients cannot starve the service (issue 51, case 3; docs/SERVER.md, "Slow clients"): with
gunicorn's sync workers 4 connections trickling a body or headers made a legitimate POST /v1/nonce
wait 39 s, with --threads 4 it took 10. Here three times as many tricklers as the service has
threads, over plain HTTP and over its own TLS, trickle their heads and bodies (and some never
finish a TLS handshake) while a whole request is answered at once, and each trickler is cut off
with 408 once its time to send a request is up."""
import datetime
import http.client
import ipaddress
import socket
import ssl
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from conftest import Service
from verifier_command import SERVER  # noqa: F401  (server/ on sys.path)
from deviceid_verifier._service._worker import REQUEST_TIMEOUT

WORKERS, THREADS = 2, 2
#: What a whole request waits for, tricklers or not: the time of its own work (a nonce is a few
#: milliseconds), far below REQUEST_TIMEOUT, which is what it would wait if a trickler held its thread.
PROMPT = 2.0
#: How late after REQUEST_TIMEOUT a trickler may be cut: the worker looks at least once a second.
CUT_SLACK = 2.5


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                                  critical=False)
                   .sign(key, hashes.SHA256()))
    directory = tmp_path_factory.mktemp("tls")
    (directory / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                          serialization.NoEncryption()))
    (directory / "cert.pem").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    return str(directory / "cert.pem"), str(directory / "key.pem")


class Trickler(threading.Thread):
    """A connection sending `first`, then the bytes of `rest` one every 0.3 s, until the server
    closes it: `cut` is then the seconds from connecting, `answer` what the server sent."""

    def __init__(self, port: int, context, first: bytes, rest: bytes) -> None:
        super().__init__(daemon=True)
        sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        if context is not None and first is not None:
            sock = context.wrap_socket(sock, server_hostname="127.0.0.1")
        self.sock, self.first, self.rest = sock, first, rest
        self.connected = time.monotonic()
        self.cut = None
        self.answer = b""

    def run(self) -> None:
        try:
            if self.first is not None:
                self.sock.sendall(self.first)
                for byte in self.rest:
                    self.sock.sendall(bytes([byte]))
                    time.sleep(0.3)  # the trickle itself, not a wait for anything
        except OSError:
            pass  # cut off while sending: what the server said before is still to be read
        try:
            while True:
                data = self.sock.recv(4096)
                if not data:
                    break
                self.answer += data
        except OSError:
            pass
        self.cut = time.monotonic() - self.connected
        self.sock.close()


#: The three services under test, (TLS, threads per worker) each: plain HTTP, the service's own
#: TLS, and one thread (a whole request then answered by the event loop's own).
SCENARIOS = [(False, THREADS), (True, THREADS), (False, 1)]


def trickle(service, tls: bool, threads: int, context) -> dict:
    """Tricklers against `service`, whole requests answered meanwhile, and the tricklers cut off:
    what the test asserts of it."""
    head = b"POST /v1/nonce HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    shapes = [
        (head, b"X-Slow: " + b"a" * 100 + b"\r\n\r\n"),  # a head that never ends in time
        (head + b"Content-Length: 100\r\n\r\n", b"{" * 100),  # a body that never ends in time
    ]
    count = 3 * WORKERS * threads
    tricklers = [Trickler(service.port, context, *shapes[i % 2]) for i in range(count)]
    if tls:  # and connections that never begin their TLS handshake
        tricklers += [Trickler(service.port, context, None, b"") for _ in range(WORKERS * threads)]
    for trickler in tricklers:
        trickler.start()

    whole = []
    for _ in range(5):  # whole requests, while every trickler is still sending
        started = time.monotonic()
        connection = (http.client.HTTPSConnection("127.0.0.1", service.port, context=context, timeout=30) if tls
                      else http.client.HTTPConnection("127.0.0.1", service.port, timeout=30))
        connection.request("POST", "/v1/nonce", body=b"")
        response = connection.getresponse()
        response.read()
        connection.close()
        whole.append((response.status, time.monotonic() - started))
    none_cut_yet = all(trickler.cut is None for trickler in tricklers)

    for trickler in tricklers:
        trickler.join(REQUEST_TIMEOUT + CUT_SLACK + 30)
    return {"whole": whole, "none_cut_yet": none_cut_yet, "tricklers": tricklers,
            "after": service.post("/v1/nonce")[0]}


@pytest.fixture(scope="module")
def trickled(ca_files, ek_anchors, tls_files, tmp_path_factory):
    """The three scenarios, run side by side (each waits out REQUEST_TIMEOUT; a trickler costs next
    to nothing): (TLS, threads) → a future of trickle()'s record."""
    started, results = [], {}
    pool = ThreadPoolExecutor(len(SCENARIOS))
    try:
        for tls, threads in SCENARIOS:
            extra = ["--threads", str(threads)] + (["--tls-cert", tls_files[0], "--tls-key", tls_files[1]] if tls else [])
            context = ssl.create_default_context(cafile=tls_files[0]) if tls else None
            database = tmp_path_factory.mktemp("trickled") / "deviceid.sqlite3"
            started.append(Service(f"sqlite:///{database}", ca_files, ek_anchors, workers=WORKERS, extra=extra,
                                   tls_context=context))
            results[tls, threads] = pool.submit(trickle, started[-1], tls, threads, context)
        yield results
    finally:
        pool.shutdown(wait=True)
        for service in started:
            service.stop()


@pytest.mark.parametrize("tls, threads", SCENARIOS, ids=["http", "https", "http-one-thread"])
def test_tricklers_hold_no_thread_and_are_cut_off(tls, threads, trickled):
    record = trickled[tls, threads].result()
    for status, elapsed in record["whole"]:
        assert status == 200 and elapsed < PROMPT, (status, elapsed)
    assert record["none_cut_yet"]

    tricklers = record["tricklers"]
    cuts = sorted(round(trickler.cut, 1) for trickler in tricklers)
    assert all(REQUEST_TIMEOUT - 0.5 <= cut <= REQUEST_TIMEOUT + CUT_SLACK for cut in cuts), cuts
    sent_any = [trickler for trickler in tricklers if trickler.first is not None]
    assert all(trickler.answer.startswith(b"HTTP/1.1 408 ") for trickler in sent_any), [t.answer for t in sent_any]
    assert record["after"] == 200


def test_a_client_expecting_100_continue_gets_it_before_its_body_and_once(services, tmp_path):
    """curl sends `Expect: 100-continue` with a body over 1 KiB and waits for it before the body
    (a second, then it sends anyway): a worker that waits for the whole body must say it first."""
    [service] = services(f"sqlite:///{tmp_path}/deviceid.sqlite3", workers=1)
    body = b" " * 2000
    with socket.create_connection(("127.0.0.1", service.port), timeout=30) as sock:
        sock.sendall(b"POST /v1/nonce HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body))
        assert sock.recv(4096) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 200 "), answer
