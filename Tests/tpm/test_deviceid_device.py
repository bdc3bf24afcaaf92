"""DeviceID's own device side — the library through the CLI, the Python binding and the C ABI's
status lists — against software TPMs (swtpm, each a "machine"), checked by tpm2-tools (the app
key's Name, the objects left loaded) and by deviceid_verifier (enrolment and attestation).

The library is the installed one: DEVICEID_TEST_CLI (the command), DEVICEID_LIBRARY and
PYTHONPATH (the binding), as scripts/test exports them."""
import base64
import importlib.machinery
import importlib.util
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import tools_device
from deviceid_verifier import Rejected, Verifier, hardware_id_from_name
from proxies import Listener, pump

ROOT = Path(__file__).resolve().parents[2]
APP_A, APP_B = "com.example.device-a", "com.example.device-b"


def cli_path():
    path = os.environ.get("DEVICEID_TEST_CLI")
    if not path:
        pytest.fail("DEVICEID_TEST_CLI is not set: run through scripts/test (the installed deviceid command)")
    return path


def deviceid(machine, *args, env=None, input=None, timeout=60):
    """Runs the deviceid command against `machine`'s TPM (None: whatever env says)."""
    merged = dict(os.environ)
    if machine is not None:
        merged["DEVICEID_TPM_TCTI"] = machine.tpm.tcti
    merged.update(env or {})
    return subprocess.run([cli_path(), *args], env=merged, input=input, capture_output=True, text=True,
                          timeout=timeout)


def hardware_id(machine, app_id, **kw):
    result = deviceid(machine, "hardware-id", app_id, **kw)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def transient_handles(machine):
    """The transient objects and sessions left loaded in `machine`'s TPM (swtpm has no resource
    manager: what a caller leaves stays, and three of either fill it)."""
    left = []
    for what in ("handles-transient", "handles-loaded-session"):
        out = subprocess.run(["tpm2_getcap", what], env=dict(os.environ, TPM2TOOLS_TCTI=machine.tpm.tcti),
                             capture_output=True, text=True, timeout=60, check=True).stdout
        left += [line for line in out.splitlines() if line.strip()]
    return left


def enrol(machine, app_id, ca):
    """`deviceid attest enrol` → PrivacyCA.challenge → `deviceid attest activate` → PrivacyCA.finish."""
    request = deviceid(machine, "attest", "enrol", app_id)
    assert request.returncode == 0, request.stderr
    challenge = ca.challenge(request.stdout)
    response = deviceid(machine, "attest", "activate", app_id, input=challenge)
    assert response.returncode == 0, response.stderr
    return ca.finish(response.stdout)


def evidence(machine, app_id, nonce, ak_certificate, tmp_path):
    certificate = tmp_path / f"ak-{app_id}.json"
    certificate.write_text(ak_certificate)
    result = deviceid(machine, "attest", "certify", app_id, "--nonce", base64.b64encode(nonce).decode(),
                      "--ak-certificate", str(certificate))
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def enrolled(machine_a, ca):
    """Machine A with an AK certificate for each of APP_A and APP_B, made by DeviceID."""
    return {app: enrol(machine_a, app, ca) for app in (APP_A, APP_B)}


# -- the hardware ID ------------------------------------------------------------------------

def test_the_id_is_the_hash_of_the_name_tpm2_tools_reads(machine_a):
    """Known answer from an independent tool: tpm2_createprimary with the documented template
    (docs/HARDWARE-ID.md) and tpm2_readpublic -n give the Name the ID is derived from."""
    name = machine_a.device.app_name(APP_A)
    assert hardware_id(machine_a, APP_A) == hardware_id_from_name(name) == tools_device.hardware_id(name)


def test_same_every_time_in_every_process_and_language(machine_a):
    first = hardware_id(machine_a, APP_A)
    assert hardware_id(machine_a, APP_A) == first
    json_form = json.loads(deviceid(machine_a, "--json", "hardware-id", APP_A).stdout)
    assert json_form == {"hardware_id": first, "app_id": APP_A}
    python = subprocess.run([sys.executable, "-c", f"""
import deviceid
ids = {{deviceid.hardware_id("{APP_A}") for _ in range(3)}}
ids.add(deviceid.Client(timeout=30).hardware_id("{APP_A}"))
print(*ids)
"""], env=dict(os.environ, DEVICEID_TPM_TCTI=machine_a.tpm.tcti), capture_output=True, text=True, timeout=60)
    assert python.returncode == 0, python.stderr
    assert python.stdout.split() == [first]
    version = int(first[14], 16)
    assert version == 8 and first[19] in "89ab", "an RFC 9562 version-8 UUID"


def test_another_app_gets_another_unrelated_id(machine_a):
    a, b = hardware_id(machine_a, APP_A), hardware_id(machine_a, APP_B)
    assert a != b
    # Nothing shared: not even the first bytes (they are independent hashes of independent keys).
    assert a[:8] != b[:8]


def test_another_machine_gets_another_id(machine_a, machine_b):
    assert hardware_id(machine_a, APP_A) != hardware_id(machine_b, APP_A)


def test_stored_nowhere_and_the_same_after_every_store_is_wiped(machine_a, tmp_path):
    home, store = tmp_path / "home", tmp_path / "store"
    env = {"HOME": str(home), "DEVICEID_STORE_DIR": str(store), "XDG_DATA_HOME": str(home / "data"),
           "DEVICEID_BACKEND": "file"}
    home.mkdir()
    first = hardware_id(machine_a, APP_A, env=env)
    deviceid(machine_a, "get", APP_A, env=env)  # a stored ID beside it, to wipe
    assert list(store.rglob("*")), "the file store holds the stable ID"
    written = sorted(str(p) for p in home.rglob("*")) + sorted(str(p) for p in store.rglob("*"))
    assert not any("hardware" in p for p in written)
    for path in (store, home):
        subprocess.run(["rm", "-rf", str(path)], check=True)
    home.mkdir()
    assert hardware_id(machine_a, APP_A, env=env) == first
    # What the call writes is the salting key's pin (docs/STATE.md, "TPM pins"), and no ID comes
    # from it: without it, the same ID.
    assert not list(home.rglob("*")), "the hardware ID writes nothing in the home"
    pins = [p for p in store.rglob("*") if p.is_file() and p.name != ".lock"]
    assert [p.name[:6] for p in pins] == ["state-"] and first.encode() not in pins[0].read_bytes(), pins
    pins[0].unlink()
    assert hardware_id(machine_a, APP_A, env=env) == first


def test_an_app_id_is_its_bytes_not_its_unicode_equivalence_class(machine_a):
    """"café" in NFC and NFD are two app ids (the template hashes the UTF-8 bytes), though Swift
    compares them as one String: the process's memory must keep them apart too."""
    nfc, nfd = "com.example.caf\u00e9", "com.example.cafe\u0301"
    fresh = {app: hardware_id(machine_a, app) for app in (nfc, nfd)}
    assert fresh[nfc] != fresh[nfd]
    out = subprocess.run([sys.executable, "-c", f"""
import deviceid
print(deviceid.hardware_id({nfc!r}), deviceid.hardware_id({nfd!r}))
"""], env=dict(os.environ, DEVICEID_TPM_TCTI=machine_a.tpm.tcti), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [fresh[nfc], fresh[nfd]]


def test_every_object_is_flushed(machine_a):
    """swtpm has no resource manager and three object slots: what DeviceID leaves loaded would
    make the fourth call fail."""
    for i in range(12):
        hardware_id(machine_a, f"com.example.flush.{i}")
    assert transient_handles(machine_a) == [], "no transient object left loaded"


# -- attestation ----------------------------------------------------------------------------

def test_enrolment_and_attestation_verify(machine_a, enrolled, ca, tmp_path):
    verifier = Verifier([ca.certificate])
    nonce = verifier.new_nonce()
    result = verifier.verify(evidence(machine_a, APP_A, nonce, enrolled[APP_A], tmp_path), nonce, app_id=APP_A)
    assert result.hardware_id == hardware_id(machine_a, APP_A)
    assert result.app_name == machine_a.device.app_name(APP_A)
    nonce_b = verifier.new_nonce()
    other = verifier.verify(evidence(machine_a, APP_B, nonce_b, enrolled[APP_B], tmp_path), nonce_b, app_id=APP_B)
    assert other.hardware_id == hardware_id(machine_a, APP_B)
    assert other.ak_name != result.ak_name, "one attestation key per app: no key common to two apps' servers"
    assert transient_handles(machine_a) == []


def test_the_python_binding_attests_too(machine_a, enrolled, ca):
    verifier = Verifier([ca.certificate])
    nonce = verifier.new_nonce()
    out = subprocess.run([sys.executable, "-c", f"""
import sys, deviceid
sys.stdout.write(deviceid.attest("{APP_A}", bytes.fromhex("{nonce.hex()}"), ak_certificate=sys.stdin.read()))
"""], input=enrolled[APP_A], env=dict(os.environ, DEVICEID_TPM_TCTI=machine_a.tpm.tcti), capture_output=True,
        text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert verifier.verify(out.stdout, nonce, app_id=APP_A).hardware_id == hardware_id(machine_a, APP_A)


def rejected(reason, call, *args, **kwargs):
    with pytest.raises(Rejected) as caught:
        call(*args, **kwargs)
    assert caught.value.reason == reason, (caught.value.reason, str(caught.value))


def test_deviceids_evidence_is_rejected_when_it_should_be(machine_a, machine_b, enrolled, ca, make_ca, tmp_path):
    verifier = Verifier([ca.certificate])
    nonce = verifier.new_nonce()
    good = evidence(machine_a, APP_A, nonce, enrolled[APP_A], tmp_path)
    verifier.verify(good, nonce, app_id=APP_A)
    rejected("nonce-replayed", verifier.verify, good, nonce, app_id=APP_A)          # a replay
    wrong = verifier.new_nonce()
    rejected("nonce-mismatch", verifier.verify, good, wrong, app_id=APP_A)          # another nonce
    nonce = verifier.new_nonce()
    message = json.loads(evidence(machine_a, APP_A, nonce, enrolled[APP_A], tmp_path))
    attest = bytearray(base64.b64decode(message["attest"]))
    attest[-1] ^= 1
    rejected("signature", verifier.verify, json.dumps(dict(message, attest=base64.b64encode(attest).decode())),
             nonce, app_id=APP_A)                                                   # a tampered byte
    nonce = verifier.new_nonce()
    other_app = json.loads(evidence(machine_a, APP_B, nonce, enrolled[APP_B], tmp_path))
    with pytest.raises(Rejected):                                                   # another app's key as A's
        verifier.verify(json.dumps(dict(other_app, app_id=APP_A)), nonce, app_id=APP_A)
    stranger = make_ca("a CA this server does not trust")
    untrusted = enrol(machine_b, APP_A, stranger)
    nonce = verifier.new_nonce()
    rejected("ak-untrusted", verifier.verify, evidence(machine_b, APP_A, nonce, untrusted, tmp_path), nonce,
             app_id=APP_A)                                                          # an untrusted AK chain


def test_a_challenge_for_another_tpm_cannot_be_activated(machine_a, machine_b, ca):
    request = deviceid(machine_b, "attest", "enrol", APP_A)
    challenge = ca.challenge(request.stdout)
    result = deviceid(machine_a, "attest", "activate", APP_A, input=challenge)
    assert result.returncode == 11, result.stderr  # INVALID_ARGUMENT: not made for this TPM
    assert "not made for this TPM" in result.stderr
    assert transient_handles(machine_a) == []


def test_an_untrusted_ek_chain_is_refused_at_enrolment(machine_a, make_ca, new_ca_certificate):
    _, unrelated_root = new_ca_certificate("not swtpm's local CA")
    strict = make_ca("a CA trusting other EK roots", ek_trust_anchors=[unrelated_root])
    request = deviceid(machine_a, "attest", "enrol", APP_A)
    rejected("ek-untrusted", strict.challenge, request.stdout)


# -- no TPM, no permission, a TPM that stops --------------------------------------------------

def test_no_tpm_is_unavailable(tmp_path):
    for tcti, words in ((f"device:{tmp_path}/tpmrm0", "does not exist"),
                        (f"swtpm:path={tmp_path}/nothing.sock", "cannot reach the TPM")):
        result = deviceid(None, "hardware-id", APP_A, env={"DEVICEID_TPM_TCTI": tcti})
        assert result.returncode == 15, result.stderr  # UNAVAILABLE
        assert words in result.stderr
        assert result.stdout == ""


def test_a_user_outside_the_tss_group_is_told_how_to_get_permission(tmp_path):
    """The resource manager is root:tss 0660 on Debian: a user outside the group gets EACCES. No
    tpmrm device exists here: a character device node named tpmrm0 stands in (1:3's numbers), in a
    mount namespace whose /sys/dev is hidden, where DeviceID takes a character device at its name
    (with sysfs, the node is class mem and refused as no TPM: the next tests)."""
    if os.geteuid() != 0:
        pytest.fail("this test needs root (to make a device node and run the command as another user)")
    device = tmp_path / "tpmrm0"
    os.mknod(device, 0o660 | stat.S_IFCHR, os.makedev(1, 3))
    os.chmod(tmp_path, 0o755)
    script = (f"mount -t tmpfs none /sys/dev && exec setpriv --reuid=nobody --regid=nogroup --clear-groups "
              f"{cli_path()} hardware-id {APP_A}")
    result = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                            # nobody's own store (none, with no home), not the session's root-only one
                            env=dict({k: v for k, v in os.environ.items() if k != "DEVICEID_STORE_DIR"},
                                     DEVICEID_TPM_TCTI=f"device:{device}", HOME="/nonexistent"),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 19, result.stderr  # PERMISSION
    assert "tss group" in result.stderr and "Permission denied" in result.stderr


def test_a_raw_tpm_device_is_refused():
    result = deviceid(None, "hardware-id", APP_A, env={"DEVICEID_TPM_TCTI": "device:/dev/tpm0"})
    assert result.returncode == 11 and "resource manager" in result.stderr


def test_a_device_path_is_judged_by_what_it_is_not_by_its_name(tmp_path):
    """0.3.0 opened any path whose last part started with tpmrm: a link named tpmrm0 to /dev/null
    ended in TIMED_OUT after the TCTI's probe. Now fstat and sysfs decide, before the TCTI."""
    (tmp_path / "tpmrm0").symlink_to("/dev/null")
    (tmp_path / "tpmrm-dir").mkdir()
    (tmp_path / "tpmrm-file").write_bytes(b"")
    os.chmod(tmp_path / "tpmrm-file", 0)  # not even readable: judged before any open
    for path, words in ((tmp_path / "tpmrm0", "is a character device of class 'mem', not a TPM"),
                        ("/dev/null", "is a character device of class 'mem', not a TPM"),
                        (tmp_path / "tpmrm-dir", "is not a character device"),
                        (tmp_path / "tpmrm-file", "is not a character device")):
        result = deviceid(None, "hardware-id", APP_A, env={"DEVICEID_TPM_TCTI": f"device:{path}"})
        assert result.returncode == 11, (path, result.stderr)  # INVALID_ARGUMENT, not TIMED_OUT (16)
        assert words in result.stderr and "/dev/tpmrm0" in result.stderr, result.stderr


def start_swtpm(machine):
    """Starts `machine`'s swtpm again on its state (a TPM restarted: its seeds are kept)."""
    tpm = machine.tpm
    for path in (tpm.socket, Path(f"{tpm.socket}.ctrl"), tpm.pidfile):
        path.unlink(missing_ok=True)
    subprocess.run(["swtpm", "socket", "--tpm2", "--tpmstate", f"dir={tpm.state}",
                    "--server", f"type=unixio,path={tpm.socket}", "--ctrl", f"type=unixio,path={tpm.socket}.ctrl",
                    "--flags", "startup-clear", "--daemon", "--pid", f"file={tpm.pidfile}"],
                   check=True, capture_output=True, timeout=60)
    deadline = time.monotonic() + 10
    while not (tpm.pidfile.exists() and tpm.pidfile.read_text().strip() and tpm.socket.is_socket()):
        assert time.monotonic() < deadline, "swtpm did not start again"
        time.sleep(0.02)
    tpm.pid = int(tpm.pidfile.read_text().strip())


def test_a_silent_tpm_is_a_timeout_not_a_hang(machine_b):
    expected = hardware_id(machine_b, "com.example.silent")
    os.kill(machine_b.tpm.pid, signal.SIGSTOP)
    try:
        start = time.monotonic()
        result = deviceid(machine_b, "--timeout", "1000", "hardware-id", "com.example.silent.new")
        elapsed = time.monotonic() - start
    finally:
        os.kill(machine_b.tpm.pid, signal.SIGCONT)
    assert result.returncode == 16, result.stderr  # TIMED_OUT
    assert "did not answer within 1000 ms" in result.stderr
    assert elapsed < 10
    assert hardware_id(machine_b, "com.example.silent") == expected


class RestartingProxy:
    """Stands between DeviceID and `machine`'s swtpm (its command and control sockets), passing
    every byte, until the client sends a TPM command with code `at` (TPM2_CC_*): then the swtpm
    is killed and started again on its state — the TPM restarted in the middle of the call — or,
    with `hold`, the command is kept and nothing more is said: a TPM that stopped mid-command."""

    def __init__(self, machine, directory, at, hold=False):
        self.machine, self.at, self.hold, self.restarted = machine, at, hold, threading.Event()
        self.back = threading.Event()  # the swtpm serves again
        self.listener = Listener(machine, directory, self.connection)
        self.path = self.listener.path

    def connection(self, client, upstream, commands):
        threading.Thread(target=pump, args=(upstream, client), daemon=True).start()
        pump(client, upstream, self.inspect if commands else None)

    def inspect(self, data):
        # A TPM command: tag (2), size (4), command code (4), big-endian.
        if len(data) < 10 or int.from_bytes(data[6:10], "big") != self.at or self.restarted.is_set():
            return True
        self.restarted.set()
        if self.hold:
            return None
        os.kill(self.machine.tpm.pid, signal.SIGKILL)
        start_swtpm(self.machine)
        self.back.set()
        return False

    def close(self):
        self.listener.close()


TPM2_CC_CREATE_PRIMARY = 0x131


def test_the_tpm_restarted_mid_call(machine_b, tmp_path):
    """The TPM restarts while a call's command is on its way: the call fails with a status
    (never "none", never a hang), and the next gives the same ID as before (the seeds persist)."""
    expected = hardware_id(machine_b, APP_A)
    proxy = RestartingProxy(machine_b, tmp_path, TPM2_CC_CREATE_PRIMARY)
    try:
        start = time.monotonic()
        result = deviceid(None, "hardware-id", APP_A, env={"DEVICEID_TPM_TCTI": f"swtpm:path={proxy.path}"})
        elapsed = time.monotonic() - start
    finally:
        proxy.close()
    assert proxy.restarted.is_set(), "the proxy saw the CreatePrimary command"
    assert result.returncode == 15, result.stderr  # UNAVAILABLE: the connection failed
    assert result.stdout == "" and "connection to the TPM" in result.stderr and "TPM2_CreatePrimary" in result.stderr
    assert elapsed < 10
    assert proxy.back.wait(20), "swtpm started again"
    assert hardware_id(machine_b, APP_A) == expected
    assert transient_handles(machine_b) == []


def test_a_tpm_that_stops_mid_command_is_a_timeout(machine_b, tmp_path):
    """The command reaches the TPM and no answer comes: TIMED_OUT at the deadline (the swtpm
    TCTI's own receive would wait forever)."""
    proxy = RestartingProxy(machine_b, tmp_path, TPM2_CC_CREATE_PRIMARY, hold=True)
    try:
        start = time.monotonic()
        result = deviceid(None, "--timeout", "1500", "hardware-id", "com.example.held",
                          env={"DEVICEID_TPM_TCTI": f"swtpm:path={proxy.path}"})
        elapsed = time.monotonic() - start
    finally:
        proxy.close()
    assert proxy.restarted.is_set(), "the proxy held the CreatePrimary command"
    assert result.returncode == 16, result.stderr  # TIMED_OUT
    assert "did not answer within 1500 ms" in result.stderr
    assert 1.4 < elapsed < 8


# -- every status the C functions return here is on their documented lists -------------------

def gen_man():
    loader = importlib.machinery.SourceFileLoader("gen_man", str(ROOT / "scripts" / "gen-man"))
    spec = importlib.util.spec_from_loader("gen_man", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_the_statuses_returned_with_a_tpm_are_documented(machine_a, tmp_path):
    gen = gen_man()
    documented = {name: set(gen.documented_statuses(doc or "")) for _, group, doc, _ in gen.header_entries()[0]
                  for name, declaration in group if declaration.startswith("int ")}
    names = {int(value): name for name, (value, _) in gen.STATUSES.items()}
    result = subprocess.run([sys.executable, str(ROOT / "Tests" / "python" / "status_probe.py"), "file"],
                            env=dict(os.environ, DEVICEID_TPM_TCTI=machine_a.tpm.tcti,
                                     DEVICEID_STORE_DIR=str(tmp_path / "store"), PROBE_TIMEOUT_MS="30000"),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    hardware = {f for f in seen if "hardware" in f or "attest" in f}
    assert hardware, "the probe called the hardware functions"
    undocumented = [f"{f}: {names[v]}" for f in hardware for v in seen[f] if names[v] not in documented[f]]
    assert not undocumented, undocumented
    assert transient_handles(machine_a) == []
