"""The server rows of bench/run: verifications per second and their latency through the service
(`python3 -m deviceid_verifier serve`, gunicorn, on a PostgreSQL of its own on loopback) with 1,
2 and 4 workers, beside the library's in-process Verifier.verify and beside python-fido2's
verification of a WebAuthn "packed" attestation (Debian's python3-fido2); and App Attest's
assertions, WebAuthnVerifier.verify_assertion beside python-fido2's CoseKey.verify, and the
service's verifyAssertion with its credentials and counters in PostgreSQL, 1, 2 and 4 workers of
serve's default 2 threads, and 1 worker of 1 thread (--threads 1, which idles while its request
waits on the database), each beside its floor measured in the same run: the same serve command
line and gunicorn answering from a prepared statement with as many database round trips as a
verifyAssertion makes (bench/floor.py; the round trips counted in PostgreSQL's statement log).

The service and its floor run as production runs them (docs/SERVER.md): from the venv bench/run
makes, BENCH_SERVER_PYTHON, with deviceid-verifier[service,postgresql] from PyPI (psycopg's C
implementation, psycopg[binary]); one worker once more with Debian's packages (python3-psycopg,
pure Python, and gunicorn), as python3-deviceid-verifier runs.

The load comes from client processes (two per worker, each one request in flight) that send
prepared requests on raw sockets and keep the connection when the server keeps it: a client
costs about a tenth of a request's time, so that the figures are the server's.

The evidence is made in software (the AK and app key are software P-256 keys in the frozen
templates, signing the TPMS_ATTEST a TPM would): a verifier cannot tell, and a swtpm would take
tens of milliseconds per evidence, which is the device's cost, not the server's. Each
verification has its nonce issued by the service beforehand, as an app server would.

Run by bench/run with Debian's python3 (cryptography, psycopg, gunicorn, fido2), which makes the
evidence and runs the clients; prints JSON rows."""
import base64
import contextlib
import datetime
import hashlib
import http.client
import json
import multiprocessing
import os
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "server"), os.path.join(ROOT, "Tests", "server"), os.path.join(ROOT, "Tests", "tpm")]

from cryptography import x509  # noqa: E402
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402

import deviceid_verifier as dv  # noqa: E402
from machines import make_ca_certificate  # noqa: E402
from postgres import PostgreSQL, free_port  # noqa: E402

APP = "com.example.bench"
PER_RUN = 400          # verifications per measured run in process, and of the attestation rows
ASSERTIONS = 1200      # assertions per measured run of the service and of its floor
ROUNDS = 3             # measured runs of each, every setup's floor and service in turn, pooled
OWNER = 0x40000001
#: The interpreter of the production install (bench/run's venv), and Debian's, with this checkout's server/.
PRODUCTION = os.environ["BENCH_SERVER_PYTHON"]
DEBIAN = "/usr/bin/python3"


def _b64(data):
    return base64.b64encode(data).decode()


def _public(key, attributes):
    n = key.public_key().public_numbers()
    return (struct.pack(">HHIHHHHHH", 0x0023, 0x000B, attributes, 0, 0x0010, 0x0018, 0x000B, 0x0003, 0x0010)
            + b"\x00\x20" + n.x.to_bytes(32, "big") + b"\x00\x20" + n.y.to_bytes(32, "big"))


def _qualified(name):
    return b"\x00\x0b" + hashlib.sha256(struct.pack(">I", OWNER) + name).digest()


class SoftwareDevice:
    """Evidence as a TPM would make it, from software keys, with an AK certificate of `ca`."""

    def __init__(self, ca_key, ca_certificate):
        self.ak = ec.generate_private_key(ec.SECP256R1())
        self.app = ec.generate_private_key(ec.SECP256R1())
        self.ak_public = _public(self.ak, dv.AK_ATTRIBUTES)
        self.app_public = _public(self.app, dv.APP_KEY_ATTRIBUTES)
        self.ak_name, self.app_name = dv.name_of(self.ak_public), dv.name_of(self.app_public)
        now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        self.certificate = (
            x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ak")]))
            .issuer_name(ca_certificate.subject).public_key(self.ak.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=1)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([dv.TCG_KP_AIK_CERTIFICATE]), critical=False)
            .add_extension(x509.SubjectAlternativeName([
                x509.UniformResourceIdentifier(dv.AK_NAME_URI_PREFIX + self.ak_name.hex()),
                x509.UniformResourceIdentifier(dv.app_id_uri(APP))]), critical=False)
            .sign(ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.DER))

    def evidence(self, nonce):
        def tpm2b(data):
            return struct.pack(">H", len(data)) + data
        attest = (struct.pack(">IH", 0xFF544347, 0x8017) + tpm2b(_qualified(self.ak_name)) + tpm2b(nonce)
                  + struct.pack(">QIIB", 1234, 1, 0, 1) + struct.pack(">Q", 1) + tpm2b(self.app_name)
                  + tpm2b(_qualified(self.app_name)))
        r, s = decode_dss_signature(self.ak.sign(attest, ec.ECDSA(hashes.SHA256())))
        signature = struct.pack(">HHH", 0x0018, 0x000B, 32) + r.to_bytes(32, "big") + struct.pack(">H", 32) \
            + s.to_bytes(32, "big")
        return {"v": 1, "type": "deviceid.attestation", "app_id": APP,
                "hardware_id": dv.hardware_id_from_name(self.app_name), "nonce": _b64(nonce),
                "app_public": _b64(self.app_public), "ak_public": _b64(self.ak_public), "attest": _b64(attest),
                "signature": _b64(signature), "ak_certificate": _b64(self.certificate)}


def summary(latencies_ms, wall_s):
    ordered = sorted(latencies_ms)
    return {"per_second": len(ordered) / wall_s, "p50": statistics.median(ordered),
            "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]}


def in_process(ca_key, ca_certificate, device):
    verifier = dv.Verifier([ca_certificate])
    work = []
    for _ in range(PER_RUN):
        nonce = verifier.new_nonce()
        work.append((json.dumps(device.evidence(nonce)), nonce))
    latencies = []
    start = time.perf_counter()
    for evidence, nonce in work:
        t = time.perf_counter()
        verifier.verify(evidence, nonce, app_id=APP)
        latencies.append((time.perf_counter() - t) * 1e3)
    return summary(latencies, time.perf_counter() - start)


def fido2_packed():
    """python-fido2 0.9's PackedAttestation.verify of a self attestation (ES256), per call."""
    from fido2.attestation import PackedAttestation
    from fido2.cose import ES256
    from fido2.ctap2 import AttestedCredentialData, AuthenticatorData
    key = ec.generate_private_key(ec.SECP256R1())
    credential = AttestedCredentialData.create(b"\0" * 16, os.urandom(32), ES256.from_cryptography_key(key.public_key()))
    auth_data = AuthenticatorData.create(hashlib.sha256(b"example.com").digest(), 0x41, 0, credential)
    client_data_hash = os.urandom(32)
    statement = {"alg": -7, "sig": key.sign(auth_data + client_data_hash, ec.ECDSA(hashes.SHA256()))}
    attestation = PackedAttestation()
    attestation.verify(statement, auth_data, client_data_hash)  # raises if it does not verify
    latencies = []
    start = time.perf_counter()
    for _ in range(PER_RUN):
        t = time.perf_counter()
        attestation.verify(statement, AuthenticatorData(bytes(auth_data)), client_data_hash)
        latencies.append((time.perf_counter() - t) * 1e3)
    return summary(latencies, time.perf_counter() - start)


def _assertions(ca_certificate):
    """(a credential, [(assertion message, client data)]) of a software P-256 credential key in
    DeviceID's assertion format, its AK certificate of `ca_certificate` and valid for a day: the
    server's cost, which does not depend on who signed."""
    from fido2 import cbor
    key = ec.generate_private_key(ec.SECP256R1())
    numbers = key.public_key().public_numbers()
    cose = cbor.encode({1: 2, 3: -7, -1: 1, -2: numbers.x.to_bytes(32, "big"), -3: numbers.y.to_bytes(32, "big")})
    credential = dv.WebAuthnCredential(APP, os.urandom(32), cose, 0, b"\0\x0b" + bytes(32), 1,
                                       ak_anchor=dv._crl.ca_key_id(ca_certificate),
                                       ak_not_after=datetime.datetime.utcnow() + datetime.timedelta(days=1))
    return key, credential


def assertion_rows(ca_certificate):
    """WebAuthnVerifier.verify_assertion (challenge, signature, counter) beside python-fido2's
    CoseKey.verify of the same signatures (the signature alone), per call on one core."""
    from fido2.cose import ES256
    key, credential = _assertions(ca_certificate)
    verifier = dv.WebAuthnVerifier([ca_certificate])
    rp = hashlib.sha256(APP.encode()).digest()
    work = []
    for counter in range(1, PER_RUN + 1):
        data = json.dumps({"type": "webauthn.get", "challenge": dv._wire.b64url(verifier.new_challenge()),
                           "origin": "app:bench"}).encode()
        auth = rp + b"\0" + counter.to_bytes(4, "big")
        signature = key.sign(auth + hashlib.sha256(data).digest(), ec.ECDSA(hashes.SHA256()))
        message = json.dumps({"v": 1, "type": "deviceid.webauthn-assertion", "app_id": APP,
                              "credential_id": dv._wire.b64url(credential.credential_id),
                              "authenticator_data": dv._wire.b64url(auth), "signature": dv._wire.b64url(signature),
                              "counter": counter})
        work.append((message, data, auth, signature))
    latencies = []
    start = time.perf_counter()
    for message, data, _, _ in work:
        t = time.perf_counter()
        credential = verifier.verify_assertion(message, data, credential)
        latencies.append((time.perf_counter() - t) * 1e3)
    ours = summary(latencies, time.perf_counter() - start)
    cose = ES256.from_cryptography_key(key.public_key())
    latencies = []
    start = time.perf_counter()
    for _, data, auth, signature in work:
        t = time.perf_counter()
        cose.verify(auth + hashlib.sha256(data).digest(), signature)
        latencies.append((time.perf_counter() - t) * 1e3)
    return ours, summary(latencies, time.perf_counter() - start)


def _post(port, path, body):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("POST", path, body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def attestation_bodies(port, device, clients):
    """Per client, verification requests of `device`'s evidence, each on a nonce the service issued."""
    bodies = []
    for _ in range(PER_RUN):
        nonce = json.loads(_post(port, "/v1/nonce", b"")[1])["nonce"]
        bodies.append(json.dumps({"v": 1, "type": "deviceid.verification-request", "evidence": device.evidence(
            base64.b64decode(nonce)), "nonce": nonce, "app_id": APP}).encode())
    return "/v1/attestation/verify", [bodies[i::clients] for i in range(clients)]


def assertion_bodies(port, database, clients, ca_certificate, total=ASSERTIONS):
    """Per client, the assertions of its own credential (registered in the service's database)
    with growing counters, each on a challenge the service issued: what verifyAssertion costs,
    the counter's conditional update included. A credential per client, so that no two
    in-flight requests race one counter."""
    store = dv.open_store(database)
    rp = hashlib.sha256(APP.encode()).digest()
    shares = []
    for _ in range(clients):
        key, credential = _assertions(ca_certificate)
        store.add_credential(dv.CredentialRecord(credential.credential_id, APP, credential.cose_key,
                                                 credential.ak_name, credential.ak_serial, 0,
                                                 datetime.datetime.utcnow(), ak_anchor=credential.ak_anchor,
                                                 ak_not_after=credential.ak_not_after))
        share = []
        for counter in range(1, total // clients + 1):
            challenge = json.loads(_post(port, "/v1/webauthn/challenge", b"")[1])["challenge"]
            data = json.dumps({"type": "webauthn.get", "challenge": challenge, "origin": "app:bench"}).encode()
            auth = rp + b"\0" + counter.to_bytes(4, "big")
            signature = key.sign(auth + hashlib.sha256(data).digest(), ec.ECDSA(hashes.SHA256()))
            share.append(json.dumps({"v": 1, "type": "deviceid.assertion-request", "client_data_json": dv._wire.b64url(data),
                                     "assertion": {"v": 1, "type": "deviceid.webauthn-assertion", "app_id": APP,
                                                   "credential_id": dv._wire.b64url(credential.credential_id),
                                                   "authenticator_data": dv._wire.b64url(auth),
                                                   "signature": dv._wire.b64url(signature), "counter": counter}}).encode())
        shares.append(share)
    store.close()
    return "/v1/assertion/verify", shares


def _answer(sock, buffered):
    """(status, body, what was read beyond it, whether the server closes) of one HTTP/1.1 answer."""
    while b"\r\n\r\n" not in buffered:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection before answering")
        buffered += chunk
    head, rest = buffered.split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    fields = dict((name.strip().lower(), value.strip()) for name, value in (line.split(b":", 1) for line in lines[1:]))
    length = int(fields.get(b"content-length", b"0"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection inside an answer")
        rest += chunk
    return int(lines[0].split()[1]), rest[:length], rest[length:], fields.get(b"connection", b"").lower() == b"close"


def _client(port, path, bodies, results):
    """One client process: `bodies` one after the other, each request prepared beforehand, on one
    connection as long as the server keeps it (gunicorn's sync workers close it after each answer:
    then a new connection per request, its handshake in the latency). Puts (latencies in ms,
    the bodies of failed answers) on `results`."""
    requests = [(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(body)}\r\n\r\n").encode() + body for body in bodies]
    latencies, failures, sock, buffered = [], [], None, b""
    try:
        for request in requests:
            t = time.perf_counter()
            if sock is None:
                sock, buffered = socket.create_connection(("127.0.0.1", port), timeout=30), b""
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.sendall(request)
            status, answer, buffered, closes = _answer(sock, buffered)
            if closes:
                sock.close()
                sock = None
            latencies.append((time.perf_counter() - t) * 1e3)
            if status != 200:
                failures.append(answer[:300])
    finally:
        if sock is not None:
            sock.close()
    results.put((latencies, failures))


def _load(port, path, shares):
    """(latencies in ms, wall seconds) of the shares sent at once, one client process each."""
    results = multiprocessing.Queue()
    clients = [multiprocessing.Process(target=_client, args=(port, path, share, results)) for share in shares]
    start = time.perf_counter()
    for client in clients:
        client.start()
    collected = [results.get(timeout=600) for _ in clients]
    wall = time.perf_counter() - start
    for client in clients:
        client.join()
    failures = [f for _, fs in collected for f in fs]
    if failures:
        raise RuntimeError(f"{len(failures)} requests failed: {failures[:3]}")
    return [latency for latencies, _ in collected for latency in latencies], wall


def _serve(program, workers, database, ca_files, anchor, env=None, options=(), python=PRODUCTION):
    """(process, port) of `program` (`-m deviceid_verifier` or bench/floor.py) run by `python`
    (PRODUCTION, with the package installed, or DEBIAN, with this checkout's server/) serving with
    `workers` workers on `database`, once it answers, each worker warmed up (its database
    connection open)."""
    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="deviceid-bench-serve-", delete=False)
    path = {} if python == PRODUCTION else {"PYTHONPATH": os.path.join(ROOT, "server")}
    process = subprocess.Popen(
        [python, *program, "serve", "--database", database, "--ca-key", ca_files[0], "--ca-cert", ca_files[1],
         "--ek-anchor", anchor, "--bind", f"127.0.0.1:{port}", "--workers", str(workers), *options],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env=dict({k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, **path, **(env or {})))
    process.log_path = log.name
    deadline = time.monotonic() + 60
    while True:
        try:
            if _post(port, "/v1/nonce", b"")[0] == 200:
                break
        except OSError:
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            text = open(log.name).read()
            _stop(process)
            raise RuntimeError(text)
        time.sleep(0.05)
    # A burst with more requests in flight than workers reaches every worker.
    threads = [threading.Thread(target=lambda: [_post(port, "/v1/nonce", b"") for _ in range(10)])
               for _ in range(2 * workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return process, port


def _stop(process):
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=30)
    os.unlink(process.log_path)


def service(workers, database, ca_files, anchor, make_bodies):
    """The service with `workers` workers on `database`, loaded with make_bodies(port, clients)'s
    (path, a list of bodies per client), two clients per worker."""
    process, port = _serve(["-m", "deviceid_verifier"], workers, database, ca_files, anchor)
    try:
        path, shares = make_bodies(port, 2 * workers)
        return summary(*_load(port, path, shares))
    finally:
        _stop(process)


def round_trips(postgresql, ca_files, ca_certificate):
    """The database round trips of one verifyAssertion through the service: the statements
    PostgreSQL logs (log_statement = all, on a database of its own; BEGIN and COMMIT count, each
    being one) per assertion, over 20 of them."""
    database = postgresql.new_database()
    import psycopg
    with psycopg.connect(postgresql.url_base + "/postgres", autocommit=True) as connection:
        connection.execute(f"ALTER DATABASE {database.rsplit('/', 1)[1]} SET log_statement = 'all'")
    process, port = _serve(["-m", "deviceid_verifier"], 1, database, ca_files, ca_files[1])
    try:
        path, (share,) = assertion_bodies(port, database, 1, ca_certificate, 20)
        log = postgresql.dir / "log"
        before = log.stat().st_size
        for body in share:
            status, answer = _post(port, path, body)
            assert status == 200, answer
        with open(log, "rb") as f:
            f.seek(before)
            logged = f.read().decode("utf-8", "replace")
    finally:
        _stop(process)
    statements = sum(1 for line in logged.splitlines() if "LOG:  statement: " in line or "LOG:  execute " in line)
    return statements / len(share)


#: (row suffix, workers, the interpreter, serve's other options) of the verifyAssertion rows:
#: serve's defaults (2 threads a worker) with 1, 2 and 4 workers as production installs it, 1
#: worker of one thread (which idles while its request waits on the database), and 1 worker with
#: Debian's packages.
ASSERTION_SETUPS = (("1", 1, PRODUCTION, ()), ("2", 2, PRODUCTION, ()), ("4", 4, PRODUCTION, ()),
                    ("1_thread", 1, PRODUCTION, ("--threads", "1")), ("debian_1", 1, DEBIAN, ()))


def service_assertion_rows(postgresql, ca_files, ca_certificate, rows):
    """verifyAssertion through the service in each of ASSERTION_SETUPS, beside its floor: ROUNDS
    runs of each, pooled, every setup's floor and service in turn within a round, so that what
    else the machine and its disk do in those minutes falls on every row alike (each setup has
    its own database; the others' services wait idle)."""
    trips = round_trips(postgresql, ca_files, ca_certificate)
    rows["assertion_round_trips"] = trips
    rows["assertion_runs"] = {"rounds": ROUNDS, "assertions": ASSERTIONS}
    running = []  # (suffix, workers, database, [(floor process, port), (service process, port)], measured)
    try:
        for suffix, workers, python, options in ASSERTION_SETUPS:
            database, started = postgresql.new_database(), []
            running.append((suffix, workers, database, started, {"floor": ([], 0.0), "service": ([], 0.0)}))
            started.append(_serve([os.path.join(ROOT, "bench", "floor.py")], workers, database, ca_files, ca_files[1],
                                  {"BENCH_FLOOR_ROUND_TRIPS": str(round(trips))}, options, python))
            started.append(_serve(["-m", "deviceid_verifier"], workers, database, ca_files, ca_files[1], None, options,
                                  python))
        for _ in range(ROUNDS):
            for _, workers, database, ((_, floor_port), (_, port)), measured in running:
                path, shares = assertion_bodies(port, database, 2 * workers, ca_certificate)
                for name, target in (("floor", floor_port), ("service", port)):
                    latencies, wall = _load(target, path, shares)
                    measured[name] = (measured[name][0] + latencies, measured[name][1] + wall)
    finally:
        for _, _, _, started, _ in running:
            for process, _ in started:
                _stop(process)
    for suffix, _, _, _, measured in running:
        rows[f"service_assertion_{suffix}"] = summary(*measured["service"])
        rows[f"floor_{suffix}"] = summary(*measured["floor"])

def stack(python):
    """The versions `python` serves with: psycopg (and its implementation), gunicorn, cryptography."""
    return json.loads(subprocess.run([python, "-c", "import json, cryptography, gunicorn, psycopg; print(json.dumps({"
                                      "'psycopg': psycopg.__version__, 'implementation': psycopg.pq.__impl__, "
                                      "'gunicorn': gunicorn.__version__, 'cryptography': cryptography.__version__}))"],
                                     capture_output=True, text=True, check=True, timeout=60).stdout)


def main():
    ca_key, ca_certificate = make_ca_certificate("deviceid bench CA")
    scratch = tempfile.mkdtemp(prefix="deviceid-bench-server-")
    ca_files = (os.path.join(scratch, "ca.key"), os.path.join(scratch, "ca.pem"))
    with open(ca_files[0], "wb") as f:
        f.write(ca_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption()))
    with open(ca_files[1], "wb") as f:
        f.write(ca_certificate.public_bytes(serialization.Encoding.PEM))
    device = SoftwareDevice(ca_key, ca_certificate)
    load = os.getloadavg()[0]  # what else ran on these cores: the figures are worth what it leaves
    rows = {"in_process": in_process(ca_key, ca_certificate, device), "fido2_packed": fido2_packed()}
    rows["webauthn_assertion"], rows["fido2_cose"] = assertion_rows(ca_certificate)
    postgresql = PostgreSQL()
    try:
        for workers in (1, 2, 4):
            rows[f"service_{workers}"] = service(workers, postgresql.new_database(), ca_files, ca_files[1],
                                                 lambda port, clients: attestation_bodies(port, device, clients))
        service_assertion_rows(postgresql, ca_files, ca_certificate, rows)
    finally:
        postgresql.stop()
    rows["cores"] = os.cpu_count()
    rows["stacks"] = {"production": stack(PRODUCTION), "debian": stack(DEBIAN)}
    rows["load"] = [load, os.getloadavg()[0]]
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
