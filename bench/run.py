"""Runs every comparison of bench/run inside a private keyring and writes bench/RESULTS.md.

Each row pairs a DeviceID operation with the anchor users would otherwise use, measured in the
same run, with min / median / max and the ratio of medians (DeviceID / anchor; below 1 is faster).
"""
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

WORK = os.environ["BENCH_WORK"]
ROOT = os.environ["BENCH_ROOT"]
PREFIX = f"{WORK}/prefix"
VENV_PY = f"{WORK}/venv/bin/python"
NORMAL_LIBRARY = f"{WORK}/normal/libdeviceid.so.2"
NORMAL_CLI = f"{WORK}/normal/deviceid"
CLI = f"{PREFIX}/bin/deviceid"
ENV = dict(os.environ, DEVICEID_LIBRARY=f"{PREFIX}/lib/libdeviceid.so.2", PYTHONPATH=f"{PREFIX}/python",
           DEVICEID_STORE_DIR=tempfile.mkdtemp(prefix="deviceid-bench-"))
APP = "bench.app"
rows = []  # (group, what, unit, stats, anchor name, anchor stats, target)


def sh(args, env=None, **kw):
    return subprocess.run(args, env=dict(ENV, **(env or {})), check=True, capture_output=True, text=True, **kw).stdout

# The keyring asked on every first lookup (no mirror-first answers): what 0.1.0's rows measured.
RECHECK = {"DEVICEID_MIRROR_RECHECK_S": "0"}
KEYRING_ONLY = {"DEVICEID_BACKEND": "secret-service"}


def stats(values):
    values = sorted(values)
    return values[0], statistics.median(values), values[-1]


def row(group, ours, ours_stats, anchor, anchor_stats, unit, target):
    rows.append((group, ours, ours_stats, anchor, anchor_stats, unit, target))


def repeat_process(args, n):
    """Runs a program that prints its own nanoseconds, n times."""
    return [float(sh(args).strip()) for _ in range(n)]


def hyperfine(commands, runs=40, env=None):
    out = os.path.join(WORK, "hyperfine.json")
    subprocess.run(["hyperfine", "-N", "--warmup", "3", "--runs", str(runs), "--export-json", out, *commands],
                   env=dict(ENV, **(env or {})), check=True, capture_output=True)
    with open(out) as f:
        results = json.load(f)["results"]
    return [stats([t * 1e3 for t in r["times"]]) for r in results]  # ms


def main():
    sh([CLI, "get", APP])  # mint: keyring item + mirror
    sh([CLI, "get", APP])

    print("micro-benchmarks (in-process)...", file=sys.stderr)
    micro = {}
    for line in sh([f"{WORK}/micro", "21"]).splitlines():
        name, lo, med, hi = line.split()
        micro[name] = (float(lo), float(med), float(hi))
    row("cached deviceid_get after the first answer (C)", "deviceid_get", micro["cached_get.deviceid_get"],
        "sd_id128_get_machine (warm)", micro["cached_get.sd_id128_get_machine"], "ns", "≤ 50 ns")
    row("UUID v4, text", "deviceid_uuid_generate", micro["uuid.deviceid_uuid_generate"],
        "libuuid uuid_generate_random + unparse", micro["uuid.libuuid_generate_random+unparse"], "ns", "≤ 600 ns")
    row("MD5(MAC + bundle id), hex (27 bytes)", "deviceid_hash_hex(MD5)", micro["md5.deviceid_hash_hex"],
        "OpenSSL MD5() + hex", micro["md5.openssl_MD5+hex"], "ns", "≤ 1.15× MD5()")
    row("MD5 per call through EVP", "deviceid_hash_hex(MD5)", micro["md5.deviceid_hash_hex"],
        "EVP_Digest(EVP_md5()) + hex", micro["md5.openssl_EVP_Digest(EVP_md5())+hex"], "ns", "—")
    row("app-specific machine ID, warm", "deviceid_machine_app_specific", micro["app_specific.deviceid_machine_app_specific"],
        "sd_id128_get_machine_app_specific + format", micro["app_specific.sd_id128_get_machine_app_specific+format"],
        "ns", "≤ 0.5× systemd")
    row("MD5(MAC + bundle id) with NIC discovery", "deviceid_mac_md5", micro["mac_md5.deviceid_mac_md5(discovery+md5)"],
        "OpenSSL MD5() + hex (no discovery)", micro["md5.openssl_MD5+hex"], "ns", "—")

    print("first keyring lookup in a fresh process...", file=sys.stderr)
    # Timed from main(): the deviceid program loads GLib inside its call, the libsecret one had
    # libsecret and GLib loaded by the dynamic linker before main.
    first_deviceid = [f"{WORK}/first_call_deviceid", APP]
    first_libsecret = [f"{WORK}/first_call_libsecret", APP]
    asked, mirrored, keyring_only, theirs = [], [], [], []
    for _ in range(30):
        asked.append(float(sh(first_deviceid + ["keyring"], env=RECHECK)) / 1e6)
        mirrored.append(float(sh(first_deviceid + ["mirror"])) / 1e6)
        keyring_only.append(float(sh(first_deviceid + ["keyring"], env=KEYRING_ONLY)) / 1e6)
        theirs.append(float(sh(first_libsecret)) / 1e6)
    row("first deviceid_get in a process, keyring asked (C, timed from main)", "deviceid_get, keyring asked",
        stats(asked), "secret_password_lookupv_sync, first call", stats(theirs), "ms", "≤ 1.05× libsecret")
    row("first deviceid_get in a process, mirror in sync (C, timed from main)", "deviceid_get, mirror-first",
        stats(mirrored), "secret_password_lookupv_sync, first call", stats(theirs), "ms", "≤ 0.1× libsecret")
    row("first deviceid_get, no mirror record (keyring only, C, timed from main)",
        "deviceid_get, secret-service backend", stats(keyring_only), "secret_password_lookupv_sync, first call",
        stats(theirs), "ms", "≤ 1.1× libsecret")
    # Whole processes (exec to exit): each pays for loading what it uses.
    ours, theirs_whole = hyperfine([" ".join(first_deviceid + ["keyring"]), " ".join(first_libsecret)], env=RECHECK)
    row("C program, first get, keyring asked, whole process", "deviceid_get, keyring asked", ours,
        "secret_password_lookupv_sync", theirs_whole, "ms", "≤ 1.05× libsecret")
    record = next(os.path.join(root, name) for root, _, names in os.walk(ENV["DEVICEID_STORE_DIR"])
                  for name in names if name.startswith("id-"))
    mirror_c, floor = hyperfine([" ".join(first_deviceid + ["mirror"]), f"{WORK}/read_file {record}"])
    row("C program, first get, mirror in sync, whole process", "deviceid_get, mirror-first", mirror_c,
        f"floor: a C program that opens and reads one {os.path.getsize(record)}-byte file (the mirror record)",
        floor, "ms", "— (the physical limit)")

    print("whole processes (hyperfine)...", file=sys.stderr)
    cli, tool = hyperfine([f"{CLI} get {APP}", f"secret-tool lookup service deviceid.app username {APP}"], env=RECHECK)
    row("`deviceid get` whole process", "deviceid get, keyring asked", cli, "secret-tool lookup", tool, "ms",
        "≤ 1.0× secret-tool")
    cli, tool = hyperfine([f"{CLI} get {APP}", f"secret-tool lookup service deviceid.app username {APP}"])
    row("`deviceid get` whole process, mirror in sync", "deviceid get", cli, "secret-tool lookup", tool, "ms",
        "≤ 0.12× secret-tool")
    py_ours, py_keyring, py_machineid = hyperfine([
        f"{VENV_PY} -c 'import deviceid; deviceid.get(\"{APP}\")'",
        f"{VENV_PY} -c 'import keyring; keyring.get_password(\"deviceid.app\", \"{APP}\")'",
        f"{VENV_PY} -c 'import machineid; machineid.id()'",
    ], runs=20)
    row("Python: import + get, whole process", "import deviceid; get()", py_ours,
        "import keyring; get_password()", py_keyring, "ms", "≤ 0.2× keyring")
    row("Python: import + get, whole process", "import deviceid; get()", py_ours,
        "import machineid; id()", py_machineid, "ms", "≤ 0.7× py-machineid")

    print("Python warm calls...", file=sys.stderr)
    warm = json.loads(sh([VENV_PY, "-c", f"""
import json, timeit, deviceid, keyring
import ctypes
from deviceid import _native
# The ctypes floor: a no-argument call returning a pointer-sized number, no conversion.
floor_call = _native.lib["deviceid_version"]
floor_call.restype = ctypes.c_void_p
deviceid.get("{APP}"); keyring.get_password("deviceid.app", "{APP}")
def per_call(stmt, number):
    return [t / number * 1e9 for t in timeit.repeat(stmt, number=number, repeat=15, globals=globals())]
print(json.dumps({{
    "get": per_call('deviceid.get("{APP}")', 20000),
    "floor": per_call("floor_call()", 20000),
    "keyring": [t / 1e6 for t in per_call('keyring.get_password("deviceid.app", "{APP}")', 20)],
}}))
"""]))
    row("Python warm call", "deviceid.get()", stats([t / 1e3 for t in warm["get"]]),
        "ctypes floor (a no-argument call)", stats([t / 1e3 for t in warm["floor"]]), "µs", "≤ 2 µs")
    row("Python warm call", "deviceid.get()", stats([t / 1e3 for t in warm["get"]]),
        "keyring.get_password() (warm)", stats([t * 1e3 for t in warm["keyring"]]), "µs", "—")

    print("dlopen...", file=sys.stderr)
    ours, normal, theirs = [], [], []
    for _ in range(30):
        ours.append(float(sh([f"{WORK}/dlopen", f"{PREFIX}/lib/libdeviceid.so.2"])) / 1e6)
        normal.append(float(sh([f"{WORK}/dlopen", NORMAL_LIBRARY])) / 1e6)
        theirs.append(float(sh([f"{WORK}/dlopen", "libsecret-1.so.0", "libcrypto.so.3"])) / 1e6)
    row("dlopen of the library", "libdeviceid.so.2 (Embedded Swift)", stats(ours), "libsecret-1 + libcrypto",
        stats(theirs), "ms", "≤ 0.15× libsecret + libcrypto")
    row("dlopen of the library", "the same sources, normal Swift (static runtime, as 0.1.0)", stats(normal),
        "libsecret-1 + libcrypto", stats(theirs), "ms", "—")

    print("keyring daemon frozen (SIGSTOP)...", file=sys.stderr)
    frozen = frozen_keyring()

    print("file store as it grows...", file=sys.stderr)
    store = tempfile.mkdtemp(prefix="deviceid-bench-store-")
    growth = []
    for n in (10, 100, 1000, 10000):
        count, lo, med, hi = sh([f"{WORK}/filestore", store, str(n)]).split()
        growth.append((int(count), float(lo) / 1e3, float(med) / 1e3, float(hi) / 1e3))

    print("memory and concurrency...", file=sys.stderr)
    def peak_kb(args, env=None):
        out = subprocess.run(["/usr/bin/time", "-f", "%M", *args], env=dict(ENV, **(env or {})), capture_output=True,
                             text=True, check=True)
        return int(out.stderr.strip().splitlines()[-1])
    memory = [("deviceid get (CLI), keyring asked", stats([peak_kb([CLI, "get", APP], RECHECK) for _ in range(5)])),
              ("deviceid get (CLI), mirror in sync", stats([peak_kb([CLI, "get", APP]) for _ in range(5)])),
              ("C program calling deviceid_get, keyring asked",
               stats([peak_kb([f"{WORK}/get_once", APP], RECHECK) for _ in range(5)])),
              ("C program calling deviceid_get, mirror in sync",
               stats([peak_kb([f"{WORK}/get_once", APP]) for _ in range(5)])),
              ("secret-tool lookup", stats([peak_kb(["secret-tool", "lookup", "service", "deviceid.app", "username", APP])
                                            for _ in range(5)]))]
    peak_c, peak_tool = memory[3][1], memory[4][1]
    row("peak RSS, C program's first get, mirror in sync", "deviceid_get, mirror-first", peak_c,
        "secret-tool lookup", peak_tool, "KiB", "≤ 0.5× secret-tool")
    concurrency = []
    for n in (1, 2, 4, 8, 16):
        times = []
        for trial in range(5):
            app = f"fresh.{n}.{trial}.{time.time_ns()}"
            start = time.monotonic()
            procs = [subprocess.Popen([CLI, "get", app], env=ENV, stdout=subprocess.PIPE) for _ in range(n)]
            ids = {p.communicate()[0] for p in procs}
            times.append((time.monotonic() - start) * 1e3)
            assert len(ids) == 1, "one ID per first run"
        concurrency.append((n, stats(times)))

    print("the hardware-bound ID and attestation on a software TPM...", file=sys.stderr)
    tpm_rows()
    server = server_rows()

    write(growth, memory, concurrency, frozen, sizes(), server)


def tpm_rows():
    """The hardware ID and an attestation on the swtpm bench/run started (scripts/with-swtpm),
    beside tpm2-tools doing the same TPM work. swtpm computes in software: a hardware TPM's ECC
    key generation takes tens of milliseconds more, on both sides alike."""
    tpm = {"DEVICEID_TPM_TCTI": os.environ["DEVICEID_TPM_TCTI"]}
    scratch = tempfile.mkdtemp(prefix="deviceid-bench-tpm-")
    unique = subprocess.run([VENV_PY, "-c", f"""
import hashlib, struct, sys
label, app = b"deviceid.hardware-id.v1", b"{APP}"
sys.stdout.write(hashlib.sha256(struct.pack(">I", len(label)) + label + struct.pack(">I", len(app)) + app).hexdigest())
"""], capture_output=True, text=True, check=True).stdout
    with open(os.path.join(scratch, "unique.bin"), "wb") as f:  # TPM2B sizes as tpm2-tools 5.4 reads them
        f.write(b"\x20\x00" + bytes.fromhex(unique) + b"\x00\x00")
    attributes = "fixedtpm|fixedparent|sensitivedataorigin|userwithauth|noda|sign"
    primary = (f"tpm2_createprimary -Q -C o -g sha256 -G ecc256:ecdsa-sha256:null -a '{attributes}' "
               f"-u {scratch}/unique.bin -c {scratch}/app.ctx")
    ours, theirs = hyperfine([f"{CLI} hardware-id {APP}", f"bash -c \"{primary} && tpm2_flushcontext -t\""],
                             runs=20, env=tpm)
    row("hardware ID, whole process (first in the process: the TPM derives the key)", "deviceid hardware-id", ours,
        "tpm2_createprimary (same template) + tpm2_flushcontext", theirs, "ms", "—")
    repeated = json.loads(sh([VENV_PY, "-c", f"""
import json, time, timeit, deviceid
start = time.perf_counter_ns(); deviceid.hardware_id("{APP}"); first = (time.perf_counter_ns() - start) / 1e6
warm = [t / 50 * 1e9 for t in timeit.repeat('deviceid.hardware_id("{APP}")', number=50, repeat=5, globals=globals())]
print(json.dumps({{"first": first, "warm": warm}}))
"""], env=tpm))
    row("hardware ID, repeated in a process (asks the TPM each time: follows a clear)", "deviceid.hardware_id(), again",
        stats([t / 1e3 for t in repeated["warm"]]), "deviceid.hardware_id(), first call (Python)",
        (repeated["first"] * 1e3,) * 3, "µs", "—")
    nonce = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
    ak_attributes = "fixedtpm|fixedparent|sensitivedataorigin|userwithauth|noda|restricted|sign"
    # swtpm has no resource manager and three object slots: each step flushes what it left loaded.
    certify = (f"{primary} && tpm2_flushcontext -t && tpm2_createprimary -Q -C o -g sha256 -G ecc256:ecdsa-sha256:null -a '{ak_attributes}' "
               f"-c {scratch}/ak.ctx && tpm2_flushcontext -t && tpm2_certify -Q -c {scratch}/app.ctx -C {scratch}/ak.ctx -g sha256 "
               f"-o {scratch}/attest.bin -s {scratch}/sig.bin && tpm2_flushcontext -t")
    ours, theirs = hyperfine([f"{CLI} attest certify {APP} --nonce {nonce}", f"bash -c \"{certify}\""], runs=20, env=tpm)
    row("attestation evidence, whole process (AK + app key + TPM2_Certify)", "deviceid attest certify", ours,
        "tpm2_createprimary ×2 + tpm2_certify (5.4 takes no nonce) + tpm2_flushcontext", theirs, "ms", "—")
    assertion_rows(tpm, scratch, ours)
    activation_rows(tpm, scratch)


def assertion_rows(tpm, scratch, certify):
    """App Attest's assertion: the counter (NV read, increment, read) and TPM2_Sign by the
    credential key, beside tpm2-tools' createprimary + sign of the same template, and beside an
    attestation (attest certify), whole process; and again in a process (the Python binding)."""
    digest = "A" * 43  # base64url of 32 bytes
    credential = ("tpm2_createprimary -Q -C o -g sha256 -G ecc256:null:null "
                  "-a 'fixedtpm|fixedparent|sensitivedataorigin|userwithauth|noda|sign' "
                  f"-c {scratch}/credential.ctx && head -c 32 /dev/zero > {scratch}/digest.bin && tpm2_sign -Q "
                  f"-c {scratch}/credential.ctx -g sha256 -s ecdsa -d -o {scratch}/sig.bin {scratch}/digest.bin "
                  "&& tpm2_flushcontext -t")
    ours, theirs = hyperfine([f"{CLI} assert {APP} --client-data-hash {digest}", f"bash -c \"{credential}\""],
                             runs=20, env=tpm)
    row("App Attest assertion, whole process (NV counter + credential key + TPM2_Sign)", "deviceid assert", ours,
        "tpm2_createprimary + tpm2_sign + tpm2_flushcontext (no counter)", theirs, "ms", "—")
    row("App Attest assertion beside an attestation, whole process", "deviceid assert", ours,
        "deviceid attest certify", certify, "ms", "—")
    repeated = json.loads(sh([VENV_PY, "-c", f"""
import json, timeit, deviceid
times = [t / 20 * 1e3 for t in timeit.repeat('deviceid.webauthn_assertion("{APP}", bytes(32))', number=20, repeat=5,
                                              globals=globals())]
print(json.dumps(times))
"""], env=tpm))
    row("App Attest assertion, in a process (Python binding)", "deviceid.webauthn_assertion()", stats(repeated),
        "deviceid assert, whole process", ours, "ms", "—")


def activation_rows(tpm, scratch):
    """Enrolment's TPM2_ActivateCredential, whole process, with the persistent EK swtpm_setup keeps
    at 0x81010001 beside the same activation once it is evicted (the EK made from its template
    each time): what a kept EK saves. The challenge is the Privacy CA's, trusting swtpm's local CA;
    one challenge activates again and again (nothing is finished with the CA)."""
    request = sh([CLI, "attest", "enrol", APP], env=tpm)
    challenge = os.path.join(scratch, "challenge.json")
    with open(challenge, "w") as f:
        f.write(subprocess.run(["/usr/bin/python3", "-c", CHALLENGE], input=request, text=True, check=True,
                               capture_output=True, env=dict(ENV, PYTHONPATH=f"{ROOT}/server")).stdout)
    activate = f"bash -c '{CLI} attest activate {APP} < {challenge} > /dev/null'"
    (kept,) = hyperfine([activate], runs=20, env=tpm)
    subprocess.run(["tpm2_evictcontrol", "-C", "o", "-c", "0x81010001"], check=True, capture_output=True)
    (made,) = hyperfine([activate], runs=20, env=tpm)
    row("enrolment activation, whole process (EK policy session + TPM2_ActivateCredential)",
        "deviceid attest activate, persistent EK", kept, "the same, the EK made from its template", made, "ms", "—")


# A Privacy CA's challenge for the enrolment request on stdin (deviceid_verifier, from the tree's server/).
CHALLENGE = """
import datetime, sys
from pathlib import Path
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from deviceid_verifier import PrivacyCA
conf = dict(line.split(" = ", 1) for line in Path("/etc/swtpm-localca.conf").read_text().splitlines() if " = " in line)
anchors = [x509.load_pem_x509_certificate(path.read_bytes()) for path in
           (Path(conf["statedir"], "swtpm-localca-rootca-cert.pem"), Path(conf["issuercert"])) if path.exists()]
key = ec.generate_private_key(ec.SECP256R1())
name = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, "deviceid bench Privacy CA")])
now = datetime.datetime.now(datetime.timezone.utc)
ca = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
      .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
      .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
      .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                   data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                                   encipher_only=False, decipher_only=False), critical=True)
      .sign(key, hashes.SHA256()))
print(PrivacyCA(key, ca, anchors).challenge(sys.stdin.read()))
"""


def server_rows():
    """bench/server.py, run by Debian's python3 (the evidence and the clients), the service by the
    production install bench/run made (BENCH_SERVER_PYTHON) and once by Debian's packages: the
    verifier in process, python-fido2's, and the service with 1, 2 and 4 workers."""
    print("server: verifications in process, through python-fido2, through the service...", file=sys.stderr)
    result = json.loads(subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "bench", "server.py")],
                                       capture_output=True, text=True, check=True, timeout=1800).stdout)
    cores = result.pop("cores")
    trips = result.pop("assertion_round_trips")
    runs = result.pop("assertion_runs")
    runs["load"] = result.pop("load")
    runs["stacks"] = result.pop("stacks")
    debian = runs["stacks"]["debian"]
    # (the row's name, the workers it ran: its figure per worker; None for one core in process)
    names = {"in_process": ("deviceid_verifier Verifier.verify, in process (one core)", None),
             "fido2_packed": ("python-fido2 PackedAttestation.verify (WebAuthn packed, ES256; one core)", None),
             "service_1": ("the service, 1 worker, PostgreSQL", 1),
             "service_2": ("the service, 2 workers, PostgreSQL", 2),
             "service_4": ("the service, 4 workers, PostgreSQL", 4),
             "service_assertion_1": ("the service's verifyAssertion, 1 worker (serve's default 2 threads), PostgreSQL "
                                     "(the counter's update included)", 1),
             "service_assertion_2": ("the service's verifyAssertion, 2 workers, PostgreSQL", 2),
             "service_assertion_4": ("the service's verifyAssertion, 4 workers, PostgreSQL", 4),
             "floor_1": (f"its floor: serve's gunicorn answering from a prepared statement, {trips:g} round trips, "
                         "1 worker", 1),
             "floor_2": ("its floor, 2 workers", 2),
             "floor_4": ("its floor, 4 workers", 4),
             "service_assertion_1_thread": ("the service's verifyAssertion, 1 worker of 1 thread (--threads 1)", 1),
             "floor_1_thread": ("its floor, 1 worker of 1 thread", 1),
             "service_assertion_debian_1": (f"the service's verifyAssertion, 1 worker, Debian's packages (psycopg "
                                            f"{debian['psycopg']} {debian['implementation']}, gunicorn "
                                            f"{debian['gunicorn']})", 1),
             "floor_debian_1": ("its floor, 1 worker, Debian's packages", 1),
             "webauthn_assertion": ("deviceid_verifier WebAuthnVerifier.verify_assertion (challenge, ES256, counter; "
                                    "one core)", None),
             "fido2_cose": ("python-fido2 ES256 CoseKey.verify of the same assertions (the signature alone; one core)",
                            None)}
    return cores, runs, [(*names[k], v) for k, v in result.items()]


def keyring_pid():
    out = sh(["gdbus", "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
              "--method", "org.freedesktop.DBus.GetConnectionUnixProcessID", "org.freedesktop.secrets"])
    return int(out.strip("()\n ,").split()[-1].rstrip(","))


def frozen_keyring():
    """The first lookup while the keyring daemon is stopped: the mirror answers, the ID is the same."""
    expected = sh([CLI, "get", APP]).strip()
    pid = keyring_pid()
    os.kill(pid, 19)  # SIGSTOP
    try:
        inside = [float(sh([f"{WORK}/first_call_deviceid", APP, "mirror"])) / 1e6 for _ in range(15)]
        whole = []
        for _ in range(15):
            start = time.monotonic()
            got = sh([CLI, "get", APP]).strip()
            whole.append((time.monotonic() - start) * 1e3)
            assert got == expected, "the same ID while the keyring is frozen"
    finally:
        os.kill(pid, 18)  # SIGCONT
    return [("first deviceid_get in a process (C, timed inside)", stats(inside)),
            ("`deviceid get` whole process", stats(whole))]


def sizes():
    """Stripped sizes and what each file needs, beside the same sources built as normal Swift and the
    cross builds (make install ARCH=arm64, riscv64: bench/run), each stripped by its own binutils."""
    def stripped(path, strip="strip"):
        out = os.path.join(WORK, "stripped")
        subprocess.run([strip, "-o", out, path], check=True)
        return os.path.getsize(out)
    def needed(path):
        dyn = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
        return ", ".join(l.split("[")[1].rstrip("]") for l in dyn.splitlines() if "(NEEDED)" in l)
    return [("libdeviceid.so.2, Embedded Swift", stripped(f"{PREFIX}/lib/libdeviceid.so.2"),
             needed(f"{PREFIX}/lib/libdeviceid.so.2"), "≤ 512 KB; NEEDED libc (and libm) only: GLib, libsecret, "
             "libcrypto, libdbus loaded on first use"),
            ("libdeviceid.so.2, normal Swift (static runtime, as 0.1.0)", stripped(NORMAL_LIBRARY),
             needed(NORMAL_LIBRARY), "—"),
            ("deviceid CLI, Embedded Swift", stripped(CLI), needed(CLI), "≤ 640 KB; NEEDED libc (and libm) only"),
            ("deviceid CLI, normal Swift (static runtime, as 0.1.0)", stripped(NORMAL_CLI), needed(NORMAL_CLI), "—")] + [
            (f"{name}, Embedded Swift, {arch} (cross-built)", stripped(f"{WORK}/{arch}/{path}", f"{cpu}-linux-gnu-strip"),
             needed(f"{WORK}/{arch}/{path}"), target)
            for arch, cpu in (("arm64", "aarch64"), ("riscv64", "riscv64"))
            for name, path, target in (("libdeviceid.so.2", "lib/libdeviceid.so.2", "as x86_64's"),
                                       ("deviceid CLI", "bin/deviceid", "as x86_64's"))]


def fmt(value):
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


SERVER_HEADING = "Server: attestation verifications"


def server_section(server):
    """The lines of RESULTS.md's last section, from its heading line on."""
    cores, runs, server_rows_ = server
    production = runs["stacks"]["production"]
    lines = ["", f"{SERVER_HEADING} (bench/server.py, {time.strftime('%Y-%m-%d')}; evidence made in software, "
             f"each with a nonce the service issued; the service on loopback behind gunicorn, client processes "
             f"with two requests in flight per worker, all on these {cores} cores; the service as production "
             f"installs it, deviceid-verifier[service,postgresql] from PyPI in a venv (psycopg "
             f"{production['psycopg']} {production['implementation']}, gunicorn {production['gunicorn']}, "
             f"cryptography {production['cryptography']}), unless a row says Debian's; verifyAssertion and its floor "
             f"{runs['rounds']} runs of {runs['assertions']:,} each, every row's in turn, pooled; the 1-minute load "
             f"average {runs['load'][0]:.1f} at the start, {runs['load'][1]:.1f} at the end):", "",
             "| verifier | verifications / s | per worker / s | p50 ms | p99 ms |", "|---|---|---|---|---|"]
    return lines + [f"| {name} | {r['per_second']:.0f} | {per_worker(r['per_second'], workers)} | {fmt(r['p50'])} "
                    f"| {fmt(r['p99'])} |" for name, workers, r in server_rows_]


def per_worker(per_second, workers):
    """A row's figure per worker: the service's by its workers; none for a row in process."""
    return "" if workers is None else f"{per_second / workers:.0f}"


def write_server_only():
    """`bench/run server`: the server rows alone, in place of RESULTS.md's server section (the
    rest of the file, from its last whole run, unchanged)."""
    path = os.path.join(ROOT, "bench", "RESULTS.md")
    with open(path) as f:
        text = f.read()
    kept = text.split("\n" + SERVER_HEADING, 1)[0].rstrip("\n")
    text = kept + "\n" + "\n".join(server_section(server_rows())) + "\n"
    with open(path, "w") as f:
        f.write(text)
    print(text)


def write(growth, memory, concurrency, frozen, size_rows, server):
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    lines = [
        "# Benchmark results",
        "",
        f"Produced by `bench/run` on {time.strftime('%Y-%m-%d')}: {os.cpu_count()} cores ({cpu}), "
        f"Linux {platform.release()}, release builds, a private gnome-keyring. A noisy VM: compare the",
        "ratios, not the absolute numbers. min / median / max; ratio = DeviceID median ÷ anchor median.",
        "",
        "| what | DeviceID | min / median / max | anchor | min / median / max | ratio | target |",
        "|---|---|---|---|---|---|---|",
    ]
    for group, ours, o, anchor, a, unit, target in rows:
        lines.append(f"| {group} | {ours} | {fmt(o[0])} / **{fmt(o[1])}** / {fmt(o[2])} {unit} | {anchor} | "
                     f"{fmt(a[0])} / **{fmt(a[1])}** / {fmt(a[2])} {unit} | {o[1] / a[1]:.2f}× | {target} |")
    lines += ["", "With the keyring daemon frozen (SIGSTOP), mirror in sync (target ≤ 50 ms, the same ID; "
              "checked on every run):", "", "| what | min / median / max ms |", "|---|---|"]
    lines += [f"| {name} | {fmt(s[0])} / **{fmt(s[1])}** / {fmt(s[2])} |" for name, s in frozen]
    lines += ["", "Stripped sizes (`strip`, bytes) and NEEDED entries (`readelf -d`):", "",
              "| file | stripped | NEEDED | target |", "|---|---|---|---|"]
    lines += [f"| {name} | {size:,} ({size / 1024:.0f} KB) | {deps} | {target} |" for name, size, deps, target in size_rows]
    lines += ["", "File store lookups (uncached, fresh in-memory state each time) as the store grows:", "",
              "| IDs in the store | min / median / max µs |", "|---|---|"]
    lines += [f"| {n} | {fmt(lo)} / **{fmt(med)}** / {fmt(hi)} |" for n, lo, med, hi in growth]
    lines += ["", "Peak resident memory (KiB, `/usr/bin/time -f %M`):", "", "| program | min / median / max |", "|---|---|"]
    lines += [f"| {name} | {s[0]} / **{s[1]}** / {s[2]} |" for name, s in memory]
    lines += ["", "First run with N processes racing for a new app's ID (wall ms until all have it; one ID each time):",
              "", "| processes | min / median / max ms |", "|---|---|"]
    lines += [f"| {n} | {fmt(s[0])} / **{fmt(s[1])}** / {fmt(s[2])} |" for n, s in concurrency]
    lines += server_section(server)
    text = "\n".join(lines) + "\n"
    with open(os.path.join(ROOT, "bench", "RESULTS.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    write_server_only() if sys.argv[1:] == ["server"] else main()
