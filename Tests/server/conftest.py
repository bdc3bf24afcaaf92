"""Fixtures of the server tests, every test of the verifier (server/deviceid_verifier, imported from
there: verifier_command.py): a PostgreSQL server these tests start on loopback (initdb as the
`postgres` user, since PostgreSQL refuses root), SQLite files, stores of every kind, swtpm
machines and Privacy CAs (Tests/tpm/machine_fixtures.py) and verifier services run as users run
them (`python3 -m deviceid_verifier serve`, under gunicorn). A missing component fails; nothing skips."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT / "Tests" / "tpm"))

from verifier_command import environment  # noqa: E402  (first: the checkout's server/ on sys.path)
from machine_fixtures import (  # noqa: E402,F401
    ca, enrolled_a, machine_a, machine_b, machines, make_ca, new_ca_certificate, swtpm_localca,
)
from machines import localca_files, make_ca_certificate  # noqa: E402
from postgres import Missing, PostgreSQL, free_port  # noqa: E402

# tpm2-pytss 1.2 turns every TPM structure into an empty mock when unittest.mock was imported
# before it ("if mock is loaded", tpm2_pytss/internal/utils.py); hypothesis imports unittest.mock.
# So tpm2-pytss is imported first, here, before any test module imports hypothesis.
try:
    import tpm2_pytss  # noqa: E402,F401
except ImportError:
    pass  # require_tools() says so when a machine is made

TIMEOUT = 60


@pytest.fixture(scope="session")
def postgresql():
    try:
        import psycopg  # noqa: F401
    except ImportError as e:
        pytest.fail(f"psycopg 3 is missing (Debian: apt-get install python3-psycopg): {e}")
    try:
        server = PostgreSQL()
    except Missing as e:
        pytest.fail(str(e))
    yield server
    server.stop()


@pytest.fixture
def database_url(request, postgresql, tmp_path):
    """A new empty database of the kind the test is parametrized with: "sqlite", "postgresql", or
    for tests marked memory_too (one store object, one process) "memory"."""
    if request.param == "postgresql":
        return postgresql.new_database()
    if request.param == "memory":
        return "memory:"
    return f"sqlite:///{tmp_path}/deviceid.sqlite3"


def pytest_configure(config):
    config.addinivalue_line("markers", "memory_too: run against MemoryStore as well as the databases")


def pytest_generate_tests(metafunc):
    if "database_url" in metafunc.fixturenames:
        kinds = ["sqlite", "postgresql"] + (["memory"] if metafunc.definition.get_closest_marker("memory_too") else [])
        metafunc.parametrize("database_url", kinds, indirect=True)


@pytest.fixture(scope="session")
def verifier_wheel(tmp_path_factory) -> Path:
    """The server's wheel, built as `make verifier-wheel` builds it (pure Python: nothing compiled)."""
    dist = tmp_path_factory.mktemp("dist")
    built = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), "verifier-wheel", f"DIST={dist}"],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    [wheel] = dist.glob("*.whl")
    return wheel


# -- machines and CAs ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ek_anchors(machine_a, tmp_path_factory):
    """PEM files of swtpm's local CA (root, issuer): the EK trust anchors."""
    root, issuer = localca_files()
    return [str(p) for p in (root, issuer) if p.exists()]


@pytest.fixture(scope="module")
def ca_files(tmp_path_factory):
    """(key PEM path, certificate PEM path) of a new Privacy CA."""
    from cryptography.hazmat.primitives import serialization
    key, certificate = make_ca_certificate("deviceid service test CA")
    directory = tmp_path_factory.mktemp("ca")
    key_path, cert_path = directory / "ca.key", directory / "ca.pem"
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    return str(key_path), str(cert_path)


# -- services -----------------------------------------------------------------------------------

class Service:
    """One `python3 -m deviceid_verifier serve` (gunicorn) on 127.0.0.1:port."""

    def __init__(self, database: str, ca_files, ek_anchors, *, workers: int = 2, extra=(), tls_context=None):
        """`tls_context`: the client's, when `extra` makes it serve HTTPS (--tls-cert, --tls-key)."""
        self.port = free_port()
        self.workers = workers
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.NamedTemporaryFile(prefix="deviceid-serve-", suffix=".log", delete=False)
        self.context = tls_context
        self.quitting = False
        if tls_context is not None:
            self.url = "https" + self.url[len("http"):]
        argv = [sys.executable, "-m", "deviceid_verifier", "serve", "--database", database,
                "--ca-key", ca_files[0], "--ca-cert", ca_files[1], "--bind", f"127.0.0.1:{self.port}",
                "--workers", str(workers), *extra]
        for anchor in ek_anchors:
            argv += ["--ek-anchor", anchor]
        self.process = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, env=environment(),
                                        start_new_session=True)
        deadline = time.monotonic() + TIMEOUT
        while True:
            assert self.process.poll() is None, f"serve exited {self.process.returncode}:\n{self.output()}"
            try:
                if self.get("/v1/health")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, f"serve did not answer:\n{self.output()}"
            time.sleep(0.05)

    def output(self) -> str:
        return Path(self.log.name).read_text(errors="replace")

    def processes(self) -> list:
        """The pids of gunicorn's master and of its workers, once all of them have started."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text().split()
            if len(children) >= self.workers:
                return [self.process.pid, *map(int, children)]
            assert time.monotonic() < deadline, f"{len(children)} of {self.workers} workers started:\n{self.output()}"
            time.sleep(0.05)

    def request(self, method: str, path: str, body=None, headers=None, timeout=30):
        """(status, headers, body bytes) of one request; body: bytes, str or a JSON-able object."""
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode("utf-8")
        request = urllib.request.Request(self.url + path, data=body, method=method,
                                         headers={"Content-Type": "application/json", **(headers or {})})
        try:
            with urllib.request.urlopen(request, timeout=timeout, context=self.context) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def get(self, path: str):
        return self.request("GET", path)

    def post(self, path: str, body=None, timeout=30):
        return self.request("POST", path, b"" if body is None else body, timeout=timeout)

    def kill(self, sig=signal.SIGKILL) -> None:
        """Signal the whole service (gunicorn's master and its workers)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, sig)
            self.process.wait(timeout=TIMEOUT)

    def quit(self) -> None:
        """Ask gunicorn to shut down (SIGQUIT, once), without waiting: stop() waits."""
        if self.process.poll() is None and not self.quitting:
            os.killpg(self.process.pid, signal.SIGQUIT)
            self.quitting = True

    def stop(self) -> None:
        self.quit()
        if self.process.poll() is None:
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        os.unlink(self.log.name)


@pytest.fixture
def services(ca_files, ek_anchors):
    """services(database, count, workers=2, ca=(KEY, CERT)) → that many Services on one database (with
    ca_files' CA unless `ca` names another); all stopped after."""
    started = []

    def start(database: str, count: int = 1, ca=ca_files, **options):
        new = [Service(database, ca, ek_anchors, **options) for _ in range(count)]
        started.extend(new)
        return new

    yield start
    for service in started:  # all told at once, then each awaited: their shutdowns overlap
        service.quit()
    for service in started:
        service.stop()
