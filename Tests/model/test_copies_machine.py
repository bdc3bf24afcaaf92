"""The state model's copies (docs/STATE.md, "Protection classes", rule 7 and I6), randomized:
hypothesis copies homes between two software-TPM machines and a machine without a TPM, clears a
TPM, resets, and gets with either protection class through the command, the Python binding and
the C library, and checks every answer against a model of what the rules allow. Each call
draws its backend, auto (the keyring and the file store) or file, so that one home sees both:
a seal in place through the file backend reaches the keyring, which a copy carries too
(docs/STATE.md, "Protection classes": a seal in place is a change).

A home is a directory with what a copy carries: the file store (~/.local/share/deviceid) and the
gnome-keyring keyring (~/.local/share/keyrings/login.keyring, encrypted with the password the
user brings along). Each home has its login (a private bus whose gnome-keyring-daemon unlocks
that keyring); a copy (rsync -a ~/, a backup restored, a cloned disk) stops the target's daemon,
copies the whole home, and starts it again on the copied keyring. A machine is a swtpm of
this module (its own state) and a machine ID of its own. The model keeps, per home, what its
record is — nothing (or a tombstone), a portable ID, or an ID sealed by a machine's TPM as it was
(the machine and how many times its TPM was cleared before) — and checks:
- I6: a sealed record answers its ID on the TPM that sealed it, whatever the class, and COPIED on
  any other TPM (another machine, or this one after tpm2_clear), never an ID and never a mint;
  where no TPM answers, UNAVAILABLE;
- I1 over copies: nothing is minted while the home holds a live record, sealed or not;
- sealing in place: this-device-only over a portable record answers the same ID, now sealed;
- I2: a reset (which passes over a copy) makes way for a new ID, and no ID answered before it
  comes back;
- without a usable TPM, this-device-only mints nothing and writes nothing.

Run in the model lane (scripts/test-model); DEVICEID_MODEL_EXAMPLES and DEVICEID_MODEL_STEPS bound it.
"""
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

ROOT = os.environ.get("DEVICEID_TEST_ROOT", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CLI = os.environ["DEVICEID_TEST_CLI"]
C_DRIVER = os.environ["DEVICEID_MODEL_C_DRIVER"]
PY_DRIVER = os.path.join(ROOT, "Tests", "model", "driver.py")
NO_ACTIVATION = os.path.join(ROOT, "scripts", "session-no-activation.conf")
MACHINES = ["m1", "m2", "no-tpm"]
HOMES = ["h1", "h2"]
DRIVERS = ["cli", "python", "c"]
CLASSES = ["portable", "this-device-only"]
BACKENDS = ["auto", "file"]
PASSWORD = "deviceid-copies-password"
TRACE = os.environ.get("DEVICEID_MODEL_TRACE") == "1"


def alive(pid):
    """Whether `pid` still runs: a zombie does not (a daemonized process is reaped by whoever
    adopted it, which may take a while)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


class Login:
    """A home's desktop session: a private bus (no activation) and a gnome-keyring-daemon that
    unlocks the home's own login keyring, making it on the first start."""

    def __init__(self, root, name):
        self.home = os.path.join(root, "homes", name)
        runtime = os.path.join(root, "run", name)
        os.makedirs(runtime, mode=0o700)
        data = os.path.join(self.home, ".local", "share")
        self.store = os.path.join(data, "deviceid")
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("XDG_", "DBUS_", "DEVICEID_BACKEND", "DEVICEID_STORE", "DEVICEID_PROTECTION"))
                    and k not in ("DISPLAY", "WAYLAND_DISPLAY", "GNOME_KEYRING_CONTROL")}
        self.env.update(HOME=self.home, XDG_RUNTIME_DIR=runtime, XDG_DATA_HOME=data,
                        XDG_CONFIG_HOME=os.path.join(self.home, ".config"),
                        XDG_CACHE_HOME=os.path.join(self.home, ".cache"))
        bus = os.path.join(runtime, "bus")
        # The daemon forks: its answer goes to a file, so that no pipe stays open behind it.
        with open(bus, "w") as out:
            subprocess.run(["dbus-daemon", f"--config-file={NO_ACTIVATION}", "--fork", "--print-address=1",
                            "--print-pid=1"], env=self.env, stdout=out, check=True, timeout=30)
        address, pid = open(bus).read().split()[:2]
        self.bus_pid = int(pid)
        self.env["DBUS_SESSION_BUS_ADDRESS"] = address
        self.keyring_pid = None
        self.start_keyring()

    def start_keyring(self):
        os.makedirs(os.path.join(self.home, ".local", "share"), exist_ok=True)
        subprocess.run(["gnome-keyring-daemon", "--unlock", "--components=secrets"], input=PASSWORD.encode(),
                       env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, timeout=30)
        # --unlock returns before the daemon owns its name.
        subprocess.run(["gdbus", "wait", "--session", "--timeout", "10", "org.freedesktop.secrets"], env=self.env,
                       check=True, capture_output=True, timeout=30)
        out = subprocess.run(["gdbus", "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path",
                              "/org/freedesktop/DBus", "--method", "org.freedesktop.DBus.GetConnectionUnixProcessID",
                              "org.freedesktop.secrets"], env=self.env, check=True, capture_output=True, text=True,
                             timeout=30).stdout
        self.keyring_pid = int(out.strip("()\n, ").split()[-1])

    def stop_keyring(self):
        """The login ends: the daemon stops, leaving the keyring file as it last wrote it."""
        if self.keyring_pid is None:
            return
        os.kill(self.keyring_pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while alive(self.keyring_pid):
            assert time.monotonic() < deadline, "gnome-keyring-daemon did not stop"
            time.sleep(0.02)
        self.keyring_pid = None

    def stop(self):
        if self.keyring_pid is not None and alive(self.keyring_pid):
            os.kill(self.keyring_pid, signal.SIGKILL)
        self.keyring_pid = None
        if alive(self.bus_pid):
            os.kill(self.bus_pid, signal.SIGTERM)


class Machine:
    """A swtpm with a fresh state of its own (made on its first start), or none at all."""

    def __init__(self, root, name):
        self.dir = os.path.join(root, name)
        os.makedirs(os.path.join(self.dir, "state"))
        with open(os.path.join(self.dir, "machine-id"), "w") as f:
            f.write(secrets.token_hex(16) + "\n")
        self.socket = os.path.join(self.dir, "tpm.sock")
        self.tcti = f"swtpm:path={self.socket}"
        self.pid = None
        if name == "no-tpm":
            return  # nothing listens on the socket: the TPM is UNAVAILABLE
        pidfile = os.path.join(self.dir, "swtpm.pid")
        subprocess.run(["swtpm", "socket", "--tpm2", "--tpmstate", f"dir={self.dir}/state",
                        "--server", f"type=unixio,path={self.socket}", "--ctrl", f"type=unixio,path={self.socket}.ctrl",
                        "--flags", "startup-clear", "--daemon", "--pid", f"file={pidfile}"],
                       check=True, capture_output=True, timeout=60)
        deadline = time.monotonic() + 10
        while not (os.path.exists(pidfile) and open(pidfile).read().strip()):
            assert time.monotonic() < deadline, "swtpm did not start"
            time.sleep(0.02)
        self.pid = int(open(pidfile).read().strip())

    def clear(self):
        subprocess.run(["tpm2_clear"], env=dict(os.environ, TPM2TOOLS_TCTI=self.tcti), check=True,
                       capture_output=True, timeout=60)

    def stop(self):
        if self.pid is not None:
            os.kill(self.pid, signal.SIGTERM)
            self.pid = None


class CopiesModel(RuleBasedStateMachine):
    @initialize()
    def start(self):
        missing = [tool for tool in ("swtpm", "tpm2_clear", "dbus-daemon", "gnome-keyring-daemon", "gdbus")
                   if shutil.which(tool) is None]
        assert not missing, f"missing tools: {missing} (scripts/install-deps)"
        self.tmp = tempfile.mkdtemp(prefix="deviceid-copies-")
        self.machines = {name: Machine(self.tmp, name) for name in MACHINES}
        self.logins = {name: Login(self.tmp, name) for name in HOMES}
        self.clears = {name: 0 for name in MACHINES}
        self.app = "com.example.copies." + secrets.token_hex(6)
        # Per home: None (nothing, or a tombstone), or (ID, seal): seal None for portable, else
        # (machine, how many clears its TPM had had) when it was sealed.
        self.home = {name: None for name in HOMES}
        # Per home, the IDs a reset there replaced: never answered from it again (I2); a copy
        # carries them with the home.
        self.retired = {name: set() for name in HOMES}
        self.seen = set()      # every ID answered: a mint must be new

    def teardown(self):
        for login in getattr(self, "logins", {}).values():
            login.stop()
        for machine in getattr(self, "machines", {}).values():
            machine.stop()
        shutil.rmtree(getattr(self, "tmp", ""), ignore_errors=True)

    # ---- the system under test ------------------------------------------------------------------

    def call(self, home, machine, protection, driver, op, backend):
        m = self.machines[machine]
        env = dict(self.logins[home].env)
        # The store in the home, also for root (whose default is the machine-wide /var/lib/deviceid).
        env.update(DEVICEID_BACKEND=backend, DEVICEID_STORE_DIR=self.logins[home].store,
                   DEVICEID_PROTECTION=protection, DEVICEID_TPM_TCTI=m.tcti,
                   DEVICEID_MACHINE_ID_PATH=os.path.join(m.dir, "machine-id"), DEVICEID_TIMEOUT_MS="5000")
        if driver == "cli":
            result = subprocess.run([CLI, "--json", op, self.app], env=env, capture_output=True, text=True, timeout=60)
            text = result.stdout if result.returncode == 0 else result.stderr
            answer = json.loads(text.strip().splitlines()[-1])
            return {"error": answer["error"]["name"]} if "error" in answer else answer
        args = [C_DRIVER] if driver == "c" else [sys.executable, PY_DRIVER]
        result = subprocess.run(args + [op, self.app], env=env, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout.strip().splitlines()[-1])

    def opens_here(self, seal, machine):
        return seal[0] == machine and seal[1] == self.clears[machine]

    # ---- operations and the model -----------------------------------------------------------------

    # One rule drawing the operation: hypothesis tries the first choices first (and shrinks
    # towards them), so gets lead and the rarer events follow, in these proportions.
    @rule(op=st.sampled_from(["get", "get", "get", "reset", "copy", "copy", "clear"]),
          home=st.sampled_from(HOMES), other=st.sampled_from(HOMES), machine=st.sampled_from(MACHINES),
          protection=st.sampled_from(CLASSES), driver=st.sampled_from(DRIVERS), backend=st.sampled_from(BACKENDS))
    def step(self, op, home, other, machine, protection, driver, backend):
        if TRACE:
            print(f"  {op} {home}->{other} on {machine} ({protection}, {driver}, {backend}); model {self.home}",
                  flush=True)
        if op == "get":
            self.get(home, machine, protection, driver, backend)
        elif op == "reset":
            self.reset(home, machine, driver, backend)
        elif op == "copy":
            self.copy_home(home, other)
        elif machine != "no-tpm":
            self.clear_tpm(machine)

    def get(self, home, machine, protection, driver, backend):
        answer = self.call(home, machine, protection, driver, "get", backend)
        where = f"get of {home} on {machine} ({protection}, {driver}, {backend}): {answer}; model {self.home[home]}"
        held = self.home[home]
        has_tpm = machine != "no-tpm"
        assert answer.get("id") not in self.retired[home], "I2: " + where
        if held is None:
            if protection == "this-device-only" and not has_tpm:
                assert answer.get("error") == "UNAVAILABLE", "refusal without a TPM: " + where
                return
            assert answer.get("source") == "created", where
            assert answer["id"] not in self.seen, "a mint must be a new ID: " + where
            self.seen.add(answer["id"])
            self.home[home] = (answer["id"], (machine, self.clears[machine]) if protection == "this-device-only" else None)
            return
        id_, seal = held
        assert answer.get("source") != "created", "I1: minted over a live record: " + where
        if seal is None:
            if protection == "this-device-only" and not has_tpm:
                assert answer.get("error") == "UNAVAILABLE", "sealing in place needs a TPM: " + where
                return
            assert answer.get("id") == id_, "a portable record answers its ID: " + where
            if protection == "this-device-only":
                self.home[home] = (id_, (machine, self.clears[machine]))  # sealed in place, the same ID
            return
        if not has_tpm:
            assert answer.get("error") == "UNAVAILABLE", "a sealed record where no TPM answers: " + where
        elif self.opens_here(seal, machine):
            assert answer.get("id") == id_, "I6: the sealing TPM reads its record: " + where
        else:
            assert answer.get("error") == "COPIED", "I6: another TPM reads COPIED, never an ID or a mint: " + where

    def reset(self, home, machine, driver, backend):
        answer = self.call(home, machine, "portable", driver, "reset", backend)
        held = self.home[home]
        where = f"reset of {home} on {machine} ({driver}, {backend}): {answer}; model {held}"
        if held is not None and held[1] is not None and machine == "no-tpm":
            # A sealed record no TPM can read may still be this machine's: the reset fails, changing nothing.
            assert answer.get("error") == "UNAVAILABLE", where
            return
        assert answer.get("reset") is True, "a reset passes over a copy: " + where
        if held is not None:
            self.retired[home].add(held[0])
        self.home[home] = None

    def copy_home(self, source, to):
        """rsync, a backup restored, a cloned disk: the target becomes what the source holds, its
        keyring file with its file store; the target's login starts again on them."""
        if source == to:
            return
        src, dst = (os.path.join(self.tmp, "homes", h) for h in (source, to))
        self.logins[to].stop_keyring()
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst, symlinks=True)
        self.logins[to].start_keyring()
        self.home[to] = self.home[source]
        self.retired[to] = set(self.retired[source])

    def clear_tpm(self, machine):
        self.machines[machine].clear()
        self.clears[machine] += 1
        # A new salting key with the new owner seed: each home forgets its pin for this machine's
        # TPM, as its user would (docs/STATE.md, "TPM pins"; Tests/tpm/test_tpm_pin.py tests the
        # refusal before), so that the model goes on with what the seal does.
        m = self.machines[machine]
        for home in HOMES:
            env = dict(self.logins[home].env, DEVICEID_STORE_DIR=self.logins[home].store, DEVICEID_TPM_TCTI=m.tcti,
                       DEVICEID_MACHINE_ID_PATH=os.path.join(m.dir, "machine-id"))
            result = subprocess.run([CLI, "tpm-pin", "forget"], env=env, capture_output=True, text=True, timeout=60)
            assert result.returncode == 0, result.stderr


CopiesModel.TestCase.settings = settings(
    max_examples=int(os.environ.get("DEVICEID_MODEL_EXAMPLES", "30")),
    stateful_step_count=int(os.environ.get("DEVICEID_MODEL_STEPS", "40")),
    deadline=None, database=None, derandomize=os.environ.get("DEVICEID_MODEL_RANDOM") != "1",
    suppress_health_check=list(HealthCheck),
)
test_copies_model = CopiesModel.TestCase
