"""A randomized, stateful test of docs/STATE.md's invariants: hypothesis drives the real CLI, the
Python binding (in-process and in a forked child) and the C library across contexts and faults,
and checks every answer against a reference model of what the invariants allow.

Contexts (one user, root, sharing one private gnome-keyring): a desktop session and an ssh login
with XDG_DATA_HOME=a, the same with XDG_DATA_HOME=b (two data directories sharing the keyring),
and root's default store (/var/lib/deviceid, a tmpfs of this test's mount namespace) as a root
desktop, a root service (no session) and a root login (a runtime directory, no bus). Backends auto,
secret-service and file. Faults: the keyring locked, frozen (SIGSTOP) or killed (a new daemon started
locked), libdbus unloadable in a forked child, a mirror record deleted or corrupted, the clock
stepped back or forward (libfaketime).

The model keeps only what the invariants speak of: the reset epoch and the one final ID of each,
what each directory's mirror holds, and the advertising-limit setting. It checks:
- I1: answers that are not provisional and that asked the keyring agree within an epoch; nothing
  is minted while a keyring the user keeps IDs in cannot answer;
- I2: after a reset, an ID of an earlier epoch comes back only from a mirror that answered without
  the keyring (mirror-first, or the keyring silent), and never once the keyring was asked;
- I3: a setting change succeeds exactly when every store that may hold it is reachable, and a read
  that reaches the keyring sees the last change;
- I4: contexts of one directory see one mirror (root's service, login and desktop share one);
- liveness: with the keyring healthy, get, reset and settings succeed.

Run by scripts/test inside scripts/with-keyring and a private mount namespace (scripts/test-model);
DEVICEID_MODEL_EXAMPLES and DEVICEID_MODEL_STEPS bound it (scripts/robustness runs it longer).
A failure prints the shortest sequence of steps hypothesis found that breaks an invariant.
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
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

ROOT = os.environ.get("DEVICEID_TEST_ROOT", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CLI = os.environ["DEVICEID_TEST_CLI"]
C_DRIVER = os.environ["DEVICEID_MODEL_C_DRIVER"]
PY_DRIVER = os.path.join(ROOT, "Tests", "model", "driver.py")
KEYRING_CONTROL = os.path.join(ROOT, "scripts", "keyring-control")
LIBDBUS = os.path.realpath("/lib/x86_64-linux-gnu/libdbus-1.so.3")
FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
TIMEOUT_MS = "600"
TRACE = os.environ.get("DEVICEID_MODEL_TRACE") == "1"

# context: (directory, has a session bus, session kind)
ALL_CONTEXTS = {
    "desktop-a": ("a", True, "desktop"),
    "ssh-a": ("a", False, "login"),
    "desktop-b": ("b", True, "desktop"),
    "ssh-b": ("b", False, "login"),
    "root-desktop": ("root", True, "desktop"),
    "root-service": ("root", False, "service"),
    "root-login": ("root", False, "login"),
}
# DEVICEID_MODEL_CONTEXTS=desktop-a,desktop-b,...: only these (to aim at one part of the model).
CONTEXTS = ALL_CONTEXTS
if os.environ.get("DEVICEID_MODEL_CONTEXTS"):
    CONTEXTS = {name: ALL_CONTEXTS[name] for name in os.environ["DEVICEID_MODEL_CONTEXTS"].split(",")}
# DEVICEID_MODEL_RULES=get,reset,...: only these rules (the others never run).
RULES = set(filter(None, os.environ.get("DEVICEID_MODEL_RULES", "").split(",")))


def only_if_chosen(function):
    return precondition(lambda self: not RULES or function.__name__ in RULES)(function)


BACKENDS = ["auto", "auto", "secret-service", "file"]  # auto, the default, twice as often
# DEVICEID_MODEL_BACKENDS=auto,file: only these.
if os.environ.get("DEVICEID_MODEL_BACKENDS"):
    BACKENDS = os.environ["DEVICEID_MODEL_BACKENDS"].split(",")
DRIVERS = ["cli", "python", "c", "fork", "fork-nolibdbus"]
# DEVICEID_MODEL_DRIVERS=cli,fork,...: only these drivers.
if os.environ.get("DEVICEID_MODEL_DRIVERS"):
    DRIVERS = os.environ["DEVICEID_MODEL_DRIVERS"].split(",")


def drivers(*names):
    return st.sampled_from([d for d in names if d in DRIVERS] or DRIVERS)
CLOCKS = ["", "-2d", "+2d", "+40d"]
ERRORS_WHEN_SILENT = {"LOCKED", "TIMED_OUT", "UNAVAILABLE", "KEYRING", "NO_COLLECTION", "CORRUPT"}


def keyring_pid():
    out = subprocess.run(["gdbus", "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path",
                          "/org/freedesktop/DBus", "--method", "org.freedesktop.DBus.GetConnectionUnixProcessID",
                          "org.freedesktop.secrets"], capture_output=True, text=True, timeout=30).stdout
    digits = "".join(c for c in out.split()[-1] if c.isdigit()) if out.strip() else ""
    return int(digits) if digits else None


def control(action):
    subprocess.run([KEYRING_CONTROL, action], capture_output=True, timeout=60)


class DeviceIDModel(RuleBasedStateMachine):
    # ---- the system under test ------------------------------------------------------------------

    def env(self, context, backend):
        directory, bus, kind = ALL_CONTEXTS[context]
        env = dict(self.base_env)
        for name in ("XDG_DATA_HOME", "DEVICEID_STORE_DIR", "STATE_DIRECTORY", "DEVICEID_BACKEND"):
            env.pop(name, None)
        if directory != "root":
            env["XDG_DATA_HOME"] = os.path.join(self.tmp, directory)
        if not bus:
            env.pop("DBUS_SESSION_BUS_ADDRESS", None)
            if kind == "service":
                env.pop("XDG_RUNTIME_DIR", None)
            else:
                env["XDG_RUNTIME_DIR"] = os.path.join(self.tmp, "no-bus")
        env["DEVICEID_BACKEND"] = backend
        env["DEVICEID_TIMEOUT_MS"] = TIMEOUT_MS
        if self.clock:
            # Monotonic clocks stay real (deadlines use them); the fix libfaketime applies to waits on
            # them by default turns every deadline into one already passed.
            env.update(LD_PRELOAD=FAKETIME, FAKETIME=self.clock, FAKETIME_DONT_FAKE_MONOTONIC="1",
                       FAKETIME_FORCE_MONOTONIC_FIX="0")
        return env

    def call(self, context, backend, driver, op, recheck=None):
        if TRACE:
            print(f"  {op} via {context}/{backend}/{driver} recheck={recheck} clock={self.clock!r} keyring={self.keyring}",
                  flush=True)
        env = self.env(context, backend)
        if recheck is not None:
            env["DEVICEID_MIRROR_RECHECK_S"] = str(recheck)
        if driver == "cli":
            words = {"get": ["get", self.app], "reset": ["reset", self.app], "limit-get": ["advertising", "limit"],
                     "limit-on": ["advertising", "limit", "on"], "limit-off": ["advertising", "limit", "off"]}[op]
            result = subprocess.run([CLI, "--json", *words], env=env, capture_output=True, text=True, timeout=60)
            text = result.stdout if result.returncode == 0 else result.stderr
            answer = json.loads(text.strip().splitlines()[-1])
            if "error" in answer:
                return {"error": answer["error"]["name"], "message": answer["error"].get("message", "")}
            if op == "get":
                answer.setdefault("provisional", False)  # 0.2.0 has no such field: the model runs against it too
            return answer
        if driver == "c":
            assert op in ("get", "reset")
            result = subprocess.run([C_DRIVER, op, self.app], env=env, capture_output=True, text=True, timeout=60)
            return json.loads(result.stdout)
        args = [sys.executable, PY_DRIVER] + (["--fork"] if driver.startswith("fork") else []) + [op, self.app]
        if driver == "fork-nolibdbus":
            args = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                    f'mount --bind /dev/null "{LIBDBUS}" && exec "$@"', "sh"] + args
        result = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout.strip().splitlines()[-1])

    def keyring_reachable(self, context, driver):
        """Whether this call can reach the keyring: a bus, the keyring healthy, libdbus loadable."""
        _, bus, _ = ALL_CONTEXTS[context]
        return bus and self.keyring == "healthy" and driver != "fork-nolibdbus"

    # ---- set-up -----------------------------------------------------------------------------------

    @initialize()
    def start(self):
        self.tmp = tempfile.mkdtemp(prefix="deviceid-model-")
        os.makedirs(os.path.join(self.tmp, "no-bus"), mode=0o700)
        self.base_env = dict(os.environ)
        self.app = "com.example.model." + secrets.token_hex(6)
        self.clock = ""
        self.keyring = "healthy"
        self.restore_keyring()
        self.epoch = 0
        self.final = {}        # epoch -> the one final ID
        self.epoch_of = {}     # ID -> the epoch it was minted in
        self.mirror = {"a": None, "b": None, "root": None}  # what each directory's mirror holds
        self.corrupt = {"a": False, "b": False, "root": False}
        # Every directory has been used with the keyring: it carries the marker (docs/STATE.md).
        for context in ("desktop-a", "desktop-b", "root-desktop"):  # whichever contexts the run uses
            warm = self.call(context, "auto", "cli", "get")
            assert "id" in warm, warm
        self.app = "com.example.model." + secrets.token_hex(6)  # the key under test: nothing yet
        first = self.call("root-desktop", "auto", "cli", "limit-off")  # settings are the user's: all directories
        assert first == {"limited": False}, first
        self.setting = False
        self.dir_setting = {"a": None, "b": None, "root": False}

    def restore_keyring(self):
        pid = keyring_pid()
        if pid:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        control("unlock")
        self.keyring = "healthy"

    def teardown(self):
        self.restore_keyring()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ---- faults -----------------------------------------------------------------------------------

    @only_if_chosen
    @rule()
    def lock_keyring(self):
        if self.keyring == "healthy":
            control("lock")
            self.keyring = "locked"

    @only_if_chosen
    @rule()
    def freeze_keyring(self):
        pid = keyring_pid() if self.keyring == "healthy" else None
        if pid:
            os.kill(pid, signal.SIGSTOP)
            self.keyring = "frozen"

    @only_if_chosen
    @rule()
    def kill_keyring(self):
        pid = keyring_pid() if self.keyring != "frozen" else None
        if pid:
            os.kill(pid, signal.SIGKILL)
            time.sleep(0.2)
            # The next daemon, as D-Bus activation would start it on the next call (the test bus
            # activates nothing: scripts/session-no-activation.conf): its login collection locked.
            control("start")
            self.keyring = "locked"

    @only_if_chosen
    @rule()
    def heal_keyring(self):
        if self.keyring != "healthy":
            self.restore_keyring()

    @only_if_chosen
    @rule(directory=st.sampled_from(sorted({c[0] for c in CONTEXTS.values()})))
    def delete_mirror_record(self, directory):
        for path in self.record_files(directory):
            os.unlink(path)
        self.mirror[directory] = None
        self.corrupt[directory] = False

    @only_if_chosen
    @rule(directory=st.sampled_from(sorted({c[0] for c in CONTEXTS.values()})))
    def corrupt_mirror_record(self, directory):
        for path in self.record_files(directory):
            with open(path, "r+b") as f:  # the value and checksum: the key stays readable, to find it again
                f.seek(-12, os.SEEK_END)
                f.write(b"\xff\x00garbage")
            self.mirror[directory] = None
            self.corrupt[directory] = True

    @only_if_chosen
    @rule(offset=st.sampled_from(CLOCKS))
    def step_clock(self, offset):
        self.clock = offset

    def record_files(self, directory):
        """The file of this test's ID in a directory's store: found by its content (the key is in it)."""
        path = "/var/lib/deviceid" if directory == "root" else os.path.join(self.tmp, directory, "deviceid")
        if not os.path.isdir(path):
            return []
        found = []
        for name in os.listdir(path):
            if name.startswith("id-"):
                with open(os.path.join(path, name), "rb") as f:
                    if b"deviceid.app\x00" + self.app.encode() in f.read():
                        found.append(os.path.join(path, name))
        return found

    # ---- operations and the model -----------------------------------------------------------------

    @only_if_chosen
    @rule(context=st.sampled_from(sorted(CONTEXTS)), backend=st.sampled_from(BACKENDS),
          driver=drivers(*DRIVERS), recheck=st.sampled_from([None, 0]))
    def get(self, context, backend, driver, recheck):
        directory = CONTEXTS[context][0]
        answer = self.call(context, backend, driver, "get", recheck)
        reached = backend != "file" and self.keyring_reachable(context, driver)
        where = f"get via {context}/{backend}/{driver}: {answer}"
        if "error" in answer:
            assert answer["error"] in ERRORS_WHEN_SILENT, where
            if reached:
                # Liveness: a healthy keyring answers; only a corrupt mirror with no live copy anywhere stays an error.
                assert backend == "auto" and self.corrupt[directory] and self.final.get(self.epoch) is None \
                    and answer["error"] == "CORRUPT", where
            elif backend == "file":
                assert self.corrupt[directory], where
            else:
                assert self.mirror[directory] is None or backend == "secret-service", \
                    "I1/liveness: the mirror holds a live copy and must answer: " + where
            return
        found = answer["id"]
        if reached and not answer["mirrored"]:
            assert not answer["provisional"], where
            assert self.epoch_of.get(found, self.epoch) == self.epoch, \
                f"I2: an ID of epoch {self.epoch_of.get(found)} after the reset to epoch {self.epoch}: " + where
            if self.final.get(self.epoch) is None:
                self.final[self.epoch] = found
                self.epoch_of[found] = self.epoch
            assert found == self.final[self.epoch], f"I1: two final IDs {self.final[self.epoch]} and " + where
            if backend == "auto":
                self.mirror[directory] = found
                self.corrupt[directory] = False
            return
        # Answered without the keyring: mirror-first, a silent keyring, or the file backend.
        if answer["source"] == "created":
            assert backend == "file" and answer["provisional"], \
                "I1: minted while a keyring the user keeps IDs in could not be asked: " + where
            assert self.mirror[directory] is None and not self.corrupt[directory], where
            self.epoch_of[found] = self.epoch
            self.mirror[directory] = found
            return
        assert found == self.mirror[directory], f"I4: not what {directory}'s mirror holds ({self.mirror[directory]}): " + where
        if not answer["provisional"] and self.epoch_of.get(found) == self.epoch:
            assert self.final.get(self.epoch) in (None, found), "I1: " + where

    @only_if_chosen
    @rule(context=st.sampled_from(sorted(CONTEXTS)), backend=st.sampled_from(BACKENDS),
          driver=drivers("cli", "python", "c", "fork", "fork-nolibdbus"))
    def reset(self, context, backend, driver):
        directory = CONTEXTS[context][0]
        answer = self.call(context, backend, driver, "reset")
        where = f"reset via {context}/{backend}/{driver}: {answer}"
        if self.keyring_reachable(context, driver):
            assert "error" not in answer, "liveness: " + where
        else:
            assert "error" in answer, "I2: a reset that cannot reach the keyring must fail: " + where
            assert answer["error"] in ERRORS_WHEN_SILENT, where
            return
        self.epoch += 1
        self.mirror[directory] = None
        self.corrupt[directory] = False

    @only_if_chosen
    @rule(context=st.sampled_from(sorted(CONTEXTS)), backend=st.sampled_from(BACKENDS),
          driver=drivers("cli", "python", "fork"), on=st.booleans())
    def change_setting(self, context, backend, driver, on):
        directory = CONTEXTS[context][0]
        answer = self.call(context, backend, driver, "limit-on" if on else "limit-off")
        where = f"limit {on} via {context}/{backend}/{driver}: {answer}"
        if self.keyring_reachable(context, driver):
            assert answer == {"limited": on}, "I3/liveness: " + where
            self.setting = on
            if backend != "secret-service":
                self.dir_setting[directory] = on
        else:
            assert "error" in answer and answer["error"] in ERRORS_WHEN_SILENT, \
                "I3: a change that cannot reach the keyring must fail: " + where

    @only_if_chosen
    @rule(context=st.sampled_from(sorted(CONTEXTS)), backend=st.sampled_from(BACKENDS),
          driver=drivers("cli", "python", "fork-nolibdbus"))
    def read_setting(self, context, backend, driver):
        directory = CONTEXTS[context][0]
        answer = self.call(context, backend, driver, "limit-get")
        where = f"limit? via {context}/{backend}/{driver}: {answer}"
        if backend != "file" and self.keyring_reachable(context, driver):
            assert answer == {"limited": self.setting}, "I3: " + where
            if backend == "auto":
                self.dir_setting[directory] = self.setting
        elif backend == "secret-service" or self.dir_setting[directory] is None:
            assert "error" in answer and answer["error"] in ERRORS_WHEN_SILENT, \
                "I3: a setting that cannot be read is an error, never off: " + where
        else:
            assert answer == {"limited": self.dir_setting[directory]}, "I3/I4: " + where

    @only_if_chosen
    @rule(context=st.sampled_from(sorted(CONTEXTS)), byte=st.sampled_from([b"\xff", b"\xfe", b"\xc3(", b"\xed\xa0\x80"]))
    def get_with_a_name_that_is_not_utf8(self, context, byte):
        """I5: one name, one key — bytes that are not UTF-8 are refused, never mapped onto another name."""
        result = subprocess.run([CLI.encode(), b"get", self.app.encode() + byte], env=self.env(context, "auto"),
                                capture_output=True, timeout=60)
        assert result.returncode == 2 and result.stdout == b"", f"I5: {byte!r} via {context}: {result}"

    @invariant()
    def one_final_id_per_epoch(self):
        finals = [i for i in self.final.values() if i is not None]
        assert len(finals) == len(set(finals)), f"an ID final in two epochs: {self.final}"


DeviceIDModel.TestCase.settings = settings(
    max_examples=int(os.environ.get("DEVICEID_MODEL_EXAMPLES", "30")),
    stateful_step_count=int(os.environ.get("DEVICEID_MODEL_STEPS", "40")),
    deadline=None, database=None, derandomize=os.environ.get("DEVICEID_MODEL_RANDOM") != "1",
    suppress_health_check=list(HealthCheck),
)
test_state_model = DeviceIDModel.TestCase
