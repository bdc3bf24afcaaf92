"""The state soak (issue 51, "tables stay bounded over a 10-minute run"): `serve` on a PostgreSQL of
its own, 2 workers, nonces and challenges that live 5 s, under steady traffic of the three kinds
that fill tables — nonces, WebAuthn challenges, and enrolment challenges from one saved enrolment
request replayed with no TPM (the EK certificate is public) — while the rows of `nonces` and
`challenges` are sampled every 30 s. Bounded means the samples level off at about what one
lifetime plus one purge interval (60 s) of traffic leaves, however long the run.

    python3 bench/soak.py [MINUTES]      (default 10; prints a Markdown table and the verdict)

Not a pass/fail test: the figures go into bench/RESULTS.md by hand. Needs what the server suite
needs (PostgreSQL, gunicorn, swtpm for the one saved request)."""
import http.client
import os
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "server"), os.path.join(ROOT, "Tests", "server"), os.path.join(ROOT, "Tests", "tpm")]

from cryptography.hazmat.primitives import serialization  # noqa: E402

from conftest import Service  # noqa: E402
from machines import Machine, localca_files, make_ca_certificate  # noqa: E402
from postgres import PostgreSQL  # noqa: E402

LIFETIME = 5      # seconds a nonce or challenge lives
SAMPLE_EVERY = int(os.environ.get("SOAK_SAMPLE_EVERY", "30"))
PATHS = ("/v1/nonce", "/v1/webauthn/challenge", "/v1/enrolment/challenge")


def ca_files(directory: str):
    key, certificate = make_ca_certificate("deviceid soak CA")
    key_path, cert_path = os.path.join(directory, "ca.key"), os.path.join(directory, "ca.pem")
    with open(key_path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    with open(cert_path, "wb") as f:
        f.write(certificate.public_bytes(serialization.Encoding.PEM))
    return key_path, cert_path


def load(port: int, path: str, body: bytes, stop: threading.Event, counts: dict) -> None:
    """One keep-alive client posting to `path` until `stop`, counting answers by status."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    while not stop.is_set():
        try:
            connection.request("POST", path, body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            response.read()
            status = response.status
        except (OSError, http.client.HTTPException):
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            status = "error"
        counts[path, status] = counts.get((path, status), 0) + 1


def rows(url: str) -> tuple:
    import psycopg
    with psycopg.connect(url) as connection:
        return tuple(connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                     for table in ("nonces", "challenges"))


def main() -> None:
    minutes = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    directory = tempfile.mkdtemp(prefix="deviceid-soak-")
    machine = Machine("soak")
    postgresql = PostgreSQL()
    try:
        request = machine.device.enrolment_request("com.example.soak").encode()
        url = postgresql.new_database()
        anchors = [str(p) for p in localca_files() if p.exists()]
        service = Service(url, ca_files(directory), anchors,
                          extra=("--nonce-lifetime", str(LIFETIME), "--challenge-lifetime", str(LIFETIME)))
        stop, counts = threading.Event(), {}
        clients = [threading.Thread(target=load, args=(service.port, path, request if "enrolment" in path else b"",
                                                       stop, counts)) for path in PATHS]
        for client in clients:
            client.start()
        print("| minute | nonces rows | challenges rows | requests so far |")
        print("|-------:|------------:|----------------:|----------------:|")
        start, samples = time.monotonic(), []
        while time.monotonic() - start < minutes * 60:
            time.sleep(SAMPLE_EVERY)
            nonces, challenges = rows(url)
            samples.append((nonces, challenges))
            print(f"| {(time.monotonic() - start) / 60:.1f} | {nonces:,} | {challenges:,} | "
                  f"{sum(counts.values()):,} |", flush=True)
        stop.set()
        for client in clients:
            client.join()
        service.stop()
        elapsed = time.monotonic() - start
        for (path, status), count in sorted(counts.items(), key=str):
            print(f"{path} {status}: {count:,} ({count / elapsed:,.0f}/s)")
        later = samples[len(samples) // 2:]
        print(f"largest sample in the second half: {max(n for n, _ in later):,} nonces, "
              f"{max(c for _, c in later):,} challenges; in the first half: "
              f"{max(n for n, _ in samples[:len(samples) // 2] or [(0, 0)]):,} nonces")
    finally:
        postgresql.stop()
        machine.tpm.stop()


if __name__ == "__main__":
    main()
