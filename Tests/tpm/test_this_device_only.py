"""This-device-only (issue 54; docs/STATE.md, "Protection classes"): an ID and a secret sealed to
one swtpm "machine" travel with a copied home (the file store and a gnome-keyring keyring, both
files in it) to a second swtpm machine, where they read as COPIED — not as absent, and nothing is
minted over them — and read again when the home comes back, or is restored from a backup on the
first; after tpm2_clear they cannot be read, and the words say so. The command, the Python
binding and a C program agree.

Each "session" is a login on a machine: a private D-Bus session whose gnome-keyring-daemon
unlocks the home's own login keyring (made by the first session), DEVICEID_TPM_TCTI naming that
machine's swtpm."""
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APP = "com.example.seat"
SERVICE, ACCOUNT = "com.example.seat", "licence"
SECRET = "s3cret-licence-key"
PASSWORD = "deviceid-test-password"
COPIED_EXIT = 10 + 19

# The command's --json answer (stdout) or error (stderr's last line), then its exit status.
JSON_CALL = r"""
j() { local out rc; out=$("$@" 2>"$XDG_RUNTIME_DIR/err"); rc=$?; [ $rc -eq 0 ] || out=$(tail -n1 "$XDG_RUNTIME_DIR/err"); echo "$out $rc"; }
"""

# One login: the keyring daemon unlocks (or makes) the home's login keyring; the script's own exit
# status is the session's; the daemon is stopped by the PID the bus gives for its name.
SESSION = r"""
set -e
printf %s "$DEVICEID_TEST_KEYRING_PASSWORD" | gnome-keyring-daemon --unlock --components=secrets >/dev/null
gdbus wait --session --timeout 10 org.freedesktop.secrets
keyring=$(gdbus call --session --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus \
    --method org.freedesktop.DBus.GetConnectionUnixProcessID org.freedesktop.secrets | awk '{print $2}' | tr -d ',)')
set +e
bash -c "$1"
status=$?
kill "$keyring"
exit $status
"""

C_PROGRAM = r"""
#include <deviceid.h>
#include <stdio.h>
#include <string.h>
/* argv[1] "this-device-only", "this-device-only+pcr7" or "portable"; prints the ID's and the
   secret's status names. */
int main(int argc, char **argv) {
    if (argc < 2) return 2;
    int r = deviceid_set_protection(NULL, strcmp(argv[1], "this-device-only") == 0 ? DEVICEID_PROTECTION_THIS_DEVICE_ONLY
                                    : strcmp(argv[1], "this-device-only+pcr7") == 0
                                    ? DEVICEID_PROTECTION_THIS_DEVICE_ONLY_PCR7 : DEVICEID_PROTECTION_PORTABLE);
    if (r < 0) return 3;
    char id[DEVICEID_UUID_STRING_MAX] = "";
    r = deviceid_identifier(NULL, DEVICEID_SCOPE_APP, "com.example.seat", id, sizeof id, NULL, NULL);
    printf("id %s %s\n", deviceid_status_name(r), r == 0 ? id : "-");
    void *data = NULL;
    size_t size = 0;
    r = deviceid_secret_lookup(NULL, "com.example.seat", "licence", &data, &size);
    printf("secret %s %s\n", deviceid_status_name(r), r == 0 ? (const char *)data : "-");
    deviceid_free(data);
    printf("protection %d\n", deviceid_get_protection(NULL));
    return 0;
}
"""

PYTHON = r"""
import json, sys
import deviceid
out = {}
client = deviceid.Client(protection=sys.argv[1])
out["protection"] = client.protection
try:
    out["id"] = client.get("com.example.seat")
except deviceid.DeviceIDError as e:
    out["id"] = [e.name, type(e).__name__, str(e)]
try:
    value = client.lookup_secret("com.example.seat", "licence")
    out["secret"] = None if value is None else value.decode()
except deviceid.DeviceIDError as e:
    out["secret"] = [e.name, type(e).__name__, str(e)]
print(json.dumps(out))
"""


def cli_path():
    return os.environ.get("DEVICEID_TEST_CLI") or shutil.which("deviceid")


@pytest.fixture(scope="module")
def c_program(tmp_path_factory):
    """The C ABI's view: a program that sets the protection class and reads the ID and the secret."""
    work = tmp_path_factory.mktemp("c")
    source = work / "tdo.c"
    source.write_text(C_PROGRAM)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "deviceid"], capture_output=True, text=True,
                           check=True).stdout.split()
    libdir = subprocess.run(["pkg-config", "--variable=libdir", "deviceid"], capture_output=True, text=True,
                            check=True).stdout.strip()
    subprocess.run(["cc", "-Wall", "-Werror", "-o", str(work / "tdo"), str(source), *flags, f"-Wl,-rpath,{libdir}"],
                   check=True, capture_output=True, text=True)
    return work / "tdo"


class Home:
    """A user's home directory, which a test copies between machines as rsync or a backup would."""

    def __init__(self, path: Path):
        self.path = path
        self.data = path / ".local" / "share"
        self.data.mkdir(parents=True, exist_ok=True)

    @property
    def store(self) -> Path:
        return self.data / "deviceid"

    def store_bytes(self) -> bytes:
        return b"".join(p.read_bytes() for p in sorted(self.store.glob("*")) if p.is_file()) if self.store.exists() else b""

    def copy_to(self, path: Path) -> "Home":
        shutil.copytree(self.path, path, symlinks=True, dirs_exist_ok=True)
        return Home(path)


@pytest.fixture
def homes(tmp_path):
    def make(name: str) -> Home:
        return Home(tmp_path / name)
    return make


def login(machine, home: Home, script: str, *, tcti=None, timeout=120):
    """Runs `script` (bash; $D is the command, $PY Python, $C the C program) in a login on `machine`."""
    runtime = Path(tempfile.mkdtemp(prefix="deviceid-run-"))
    runtime.chmod(0o700)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("XDG_", "DBUS_", "DEVICEID_BACKEND", "DEVICEID_STORE", "DEVICEID_PROTECTION"))
           and k not in ("DISPLAY", "WAYLAND_DISPLAY", "GNOME_KEYRING_CONTROL")}
    tcti = tcti or machine.tpm.tcti
    # Each machine its own machine ID, as two computers have (this host has one for both swtpms).
    machine_id = machine.tpm.dir / "machine-id"
    if not machine_id.exists():
        machine_id.write_text(os.urandom(16).hex() + "\n")
    env.update(HOME=str(home.path), XDG_RUNTIME_DIR=str(runtime), XDG_DATA_HOME=str(home.data),
               XDG_CONFIG_HOME=str(home.path / ".config"), XDG_CACHE_HOME=str(home.path / ".cache"),
               DEVICEID_TPM_TCTI=tcti, TPM2TOOLS_TCTI=tcti, DEVICEID_TEST_KEYRING_PASSWORD=PASSWORD,
               DEVICEID_MACHINE_ID_PATH=str(machine_id), D=cli_path(), PY=sys.executable)
    try:
        return subprocess.run(["dbus-run-session", f"--config-file={ROOT / 'scripts/session-no-activation.conf'}",
                               "--", "bash", "-c", SESSION, "login", script],
                              env=env, capture_output=True, text=True, timeout=timeout)
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


def views(machine, home, c_program, protection="portable"):
    """What the command, Python and C say of the ID and the secret, in one login."""
    script = JSON_CALL + f"""
        echo "cli-id $(j $D --protection {protection} --json get {APP})"
        echo "cli-secret $(j $D --protection {protection} --json secret lookup {SERVICE} {ACCOUNT})"
        echo "python $($PY -c '{PYTHON}' {protection})"
        echo "c-program $({c_program} {protection})" | tr '\\n' ' '; echo
        echo "keyring-item $(secret-tool lookup service deviceid.app username {APP} | head -c 7)"
    """
    result = login(machine, home, script)
    assert result.returncode == 0, result.stderr
    out = {}
    for line in result.stdout.splitlines():
        name, _, rest = line.partition(" ")
        out[name] = rest
    return out


def mint(machine, home, extra="", protection="this-device-only"):
    """A this-device-only ID and secret made in a login on `machine`: the ID."""
    result = login(machine, home, f"""
        set -e
        $D --protection {protection} get {APP}
        printf %s {SECRET} | $D --protection {protection} secret store {SERVICE} {ACCOUNT}
        {extra}
    """)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()[0]


def assert_copied(view, words):
    cli_id, status = view["cli-id"].rsplit(" ", 1)
    assert int(status) == COPIED_EXIT and json.loads(cli_id)["error"]["name"] == "COPIED", view
    assert words in json.loads(cli_id)["error"]["message"], view
    cli_secret, status = view["cli-secret"].rsplit(" ", 1)
    assert int(status) == COPIED_EXIT and json.loads(cli_secret)["error"]["name"] == "COPIED", view
    python = json.loads(view["python"])
    assert python["id"][:2] == ["COPIED", "CopiedError"] and python["secret"][:2] == ["COPIED", "CopiedError"], view
    assert view["c-program"].split()[:6] == ["id", "COPIED", "-", "secret", "COPIED", "-"], view


def assert_reads(view, id_):
    cli_id, status = view["cli-id"].rsplit(" ", 1)
    assert int(status) == 0 and json.loads(cli_id)["id"] == id_, view
    cli_secret, status = view["cli-secret"].rsplit(" ", 1)
    assert int(status) == 0, view
    python = json.loads(view["python"])
    assert python["id"] == id_ and python["secret"] == SECRET, view
    assert view["c-program"].split()[:6] == ["id", "OK", id_, "secret", "OK", SECRET], view


def test_a_home_copied_to_another_machine_reads_copied_and_reads_again_back_home(machines, homes, c_program):
    a, b = machines("tdo-a"), machines("tdo-b")
    home = homes("a")
    id_a = mint(a, home)
    # Sealed in both stores: neither the file nor the keyring item carries the ID in the clear.
    assert id_a.encode() not in home.store_bytes() and b"this-device-only" in home.store_bytes()
    keyring_file = home.data / "keyrings" / "login.keyring"
    assert keyring_file.exists()
    assert views(a, home, c_program)["keyring-item"] == "DIDTDO1"

    on_b = home.copy_to(homes("b").path)
    stored = {p.name: p.read_bytes() for p in on_b.store.glob("*")}
    view = views(b, on_b, c_program)
    assert_copied(view, "sealed on another machine")
    # Asked again, with either class: still COPIED, and nothing was minted over it. What the
    # calls on b wrote is b's pin of its TPM (docs/STATE.md, "TPM pins"): one state file, no record.
    assert_copied(views(b, on_b, c_program, "this-device-only"), "sealed on another machine")
    changed = [p.name for p in on_b.store.glob("*") if stored.get(p.name) != p.read_bytes()]
    assert len(changed) == 1 and changed[0].startswith("state-") and changed[0] not in stored, changed

    back = on_b.copy_to(homes("back").path)
    assert_reads(views(a, back, c_program), id_a)


def test_a_backup_restored_on_the_same_machine_reads(machines, homes, c_program, tmp_path):
    a = machines("tdo-restore")
    home = homes("h")
    id_a = mint(a, home)
    backup = tmp_path / "backup.tar"
    with tarfile.open(backup, "w") as tar:
        tar.add(home.path, arcname="h")
    shutil.rmtree(home.path)
    restored = tmp_path / "restored"
    with tarfile.open(backup) as tar:
        tar.extractall(restored)
    assert_reads(views(a, Home(restored / "h"), c_program), id_a)


def test_after_tpm2_clear_the_record_cannot_be_read_and_says_so(machines, homes, c_program):
    a = machines("tdo-clear")
    home = homes("h")
    id_a = mint(a, home)
    subprocess.run(["tpm2_clear"], env=dict(os.environ, TPM2TOOLS_TCTI=a.tpm.tcti), check=True,
                   capture_output=True, timeout=60)
    # First the salting key pinned at first use (docs/STATE.md, "TPM pins"): every way in is
    # refused with IO, in the pin's words, until the user forgets it; nothing is written.
    view, before = views(a, home, c_program), home.store_bytes()
    cli_id, status = view["cli-id"].rsplit(" ", 1)
    assert int(status) == 18 and json.loads(cli_id)["error"]["name"] == "IO", view
    assert "another salting key" in json.loads(cli_id)["error"]["message"], view
    assert json.loads(view["python"])["id"][0] == "IO" and view["c-program"].split()[:2] == ["id", "IO"], view
    assert home.store_bytes() == before
    forgot = login(a, home, "$D tpm-pin forget")
    assert forgot.returncode == 0 and forgot.stdout.startswith("forgot this machine's pin"), forgot.stdout + forgot.stderr
    assert_copied(views(a, home, c_program), "TPM was cleared or replaced")
    # A reset makes way: the next get mints an ID sealed to the TPM as it is now.
    result = login(a, home, f"$D reset {APP} && $D --protection this-device-only get {APP}")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] != id_a


def test_a_reset_on_the_second_machine_gives_it_the_seat(machines, homes, c_program):
    a, b = machines("tdo-seat-a"), machines("tdo-seat-b")
    home = homes("a")
    id_a = mint(a, home)
    on_b = home.copy_to(homes("b").path)
    result = login(b, on_b, f"$D reset {APP} && $D --protection this-device-only get {APP}")
    assert result.returncode == 0, result.stderr
    id_b = result.stdout.split()[0]
    assert id_b != id_a
    # The home now holds the second machine's seat: back on the first, that one is a copy.
    back = on_b.copy_to(homes("back").path)
    view = views(a, back, c_program)
    assert json.loads(view["cli-id"].rsplit(" ", 1)[0])["error"]["name"] == "COPIED"
    assert json.loads(view["python"])["id"][0] == "COPIED"


def test_a_portable_id_is_sealed_in_place_with_the_same_value(machines, homes, c_program):
    a, b = machines("tdo-upgrade-a"), machines("tdo-upgrade-b")
    home = homes("a")
    result = login(a, home, f"$D get {APP}")
    assert result.returncode == 0, result.stderr
    portable = result.stdout.split()[0]
    assert portable.encode() in home.store_bytes()
    result = login(a, home, f"$D --protection this-device-only get {APP} && $D get {APP}")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [portable, portable]
    assert portable.encode() not in home.store_bytes()
    assert views(a, home, c_program)["keyring-item"] == "DIDTDO1"
    assert json.loads(views(b, home.copy_to(homes("b").path), c_program)["python"])["id"][0] == "COPIED"


def test_a_seal_in_place_through_the_file_backend_reaches_the_keyring(machines, homes, c_program):
    """docs/STATE.md, "Protection classes" (a seal in place is a change): an auto get leaves the
    portable ID in the keyring and the file store; a this-device-only get through the file backend
    seals it in both, so that the home copied to a second machine reads COPIED there in auto too
    (the keyring's portable copy would answer it, by rule 1)."""
    a, b = machines("tdo-file-a"), machines("tdo-file-b")
    home = homes("a")
    result = login(a, home, f"$D get {APP} && DEVICEID_BACKEND=file $D --protection this-device-only get {APP}")
    assert result.returncode == 0, result.stderr
    portable, sealed = result.stdout.split()
    assert sealed == portable
    assert portable.encode() not in home.store_bytes()
    on_b = home.copy_to(homes("b").path)
    view = views(b, on_b, c_program)
    cli_id, status = view["cli-id"].rsplit(" ", 1)
    assert int(status) == COPIED_EXIT and json.loads(cli_id)["error"]["name"] == "COPIED", view
    assert json.loads(view["python"])["id"][0] == "COPIED" and view["c-program"].split()[:2] == ["id", "COPIED"], view
    at_home = views(a, home, c_program)
    assert at_home["keyring-item"] == "DIDTDO1", "the keyring's copy is sealed too"
    assert json.loads(at_home["cli-id"].rsplit(" ", 1)[0])["id"] == portable, at_home


def test_a_seal_in_place_through_the_file_backend_fails_in_the_keyrings_words_when_it_cannot_reach_it(machines, homes):
    """The keyring known through the marker cannot answer (no bus here): the seal in place fails
    with its status and words and writes nothing — the portable ID is not left in the clear in
    the keyring while the file store's copy says this-device-only; the next get that reaches it
    seals both, the same ID."""
    a = machines("tdo-file-silent")
    home = homes("h")
    result = login(a, home, JSON_CALL + f"""
        $D get {APP}
        no_bus=unix:path=$XDG_RUNTIME_DIR/no-bus
        j env DBUS_SESSION_BUS_ADDRESS=$no_bus DEVICEID_BACKEND=file $D --json --protection this-device-only get {APP}
        echo "item $(secret-tool lookup service deviceid.app username {APP} | head -c 7)"
    """)
    assert result.returncode == 0, result.stderr
    portable, answer, item = result.stdout.splitlines()
    text, status = answer.rsplit(" ", 1)
    error = json.loads(text)["error"]
    assert (error["name"], int(status)) == ("UNAVAILABLE", 15), answer
    assert "keeps IDs in a keyring" in error["message"] and "travel with the home" in error["message"], error
    assert portable.encode() in home.store_bytes() and b"this-device-only" not in home.store_bytes(), "nothing written"
    assert item.lower() == "item " + portable[:7].lower(), "the keyring's portable copy untouched"
    result = login(a, home, f"DEVICEID_BACKEND=file $D --protection this-device-only get {APP}")
    assert result.returncode == 0 and result.stdout.split() == [portable], result.stderr
    assert portable.encode() not in home.store_bytes()


def test_without_a_usable_tpm_this_device_only_refuses_and_writes_nothing(machines, homes, tmp_path):
    a = machines("tdo-none")
    home = homes("h")
    gone = f"swtpm:path={tmp_path / 'no-tpm.sock'}"
    result = login(a, home, f"""
        $D --json --protection this-device-only get {APP} 2>&1; echo "get $?"
        printf %s {SECRET} | $D --json --protection this-device-only secret store {SERVICE} {ACCOUNT} 2>&1; echo "store $?"
        echo "item $(secret-tool lookup service deviceid.app username {APP} | wc -c)"
        echo "secret $(secret-tool lookup service {SERVICE} username {ACCOUNT} | wc -c)"
    """, tcti=gone)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    get_error = json.loads(lines[0])["error"]
    assert get_error["name"] == "UNAVAILABLE" and "TPM" in get_error["message"] and lines[1] == "get 15", lines
    assert json.loads(lines[2])["error"]["name"] == "UNAVAILABLE" and lines[3] == "store 15", lines
    assert lines[4:] == ["item 0", "secret 0"], lines
    assert APP.encode() not in home.store_bytes()


def test_doctor_and_the_environment_report_say_which_binding_is_in_force(machines, homes, tmp_path):
    a = machines("tdo-doctor")
    home = homes("h")
    script = JSON_CALL + """
        for class in portable this-device-only; do
            echo "doctor-$class $($D --json --protection $class doctor 2>/dev/null) $?"
            echo "python-$class $($PY -c 'import deviceid, sys; deviceid.set_protection(sys.argv[1]); e = deviceid.environment(); print(e.protection, e.binding)' $class)"
        done
    """
    seen = {}
    for where, tcti in (("tpm", None), ("none", f"swtpm:path={tmp_path / 'no-tpm.sock'}")):
        result = login(a, home, script, tcti=tcti)
        assert result.returncode == 0, result.stderr
        for line in result.stdout.splitlines():
            name, _, rest = line.partition(" ")
            seen[f"{where}/{name}"] = rest
    def doctor(key):
        text, status = seen[key].rsplit(" ", 1)
        report = json.loads(text)
        return report["environment"]["protection"], [c for c in report["checks"] if c["name"] == "protection"][0], int(status)
    protection, check, _ = doctor("tpm/doctor-this-device-only")
    assert (protection["class"], protection["binding"], check["ok"]) == ("this-device-only", "tpm", True), protection
    protection, check, status = doctor("none/doctor-this-device-only")
    assert (protection["binding"], check["ok"], check["essential"]) == ("refused", False, True), protection
    assert "no host-bound key" in protection["detail"] and status == 15, protection
    assert doctor("none/doctor-portable")[0]["binding"] == "none"
    assert seen["tpm/python-this-device-only"] == "this-device-only tpm"
    assert seen["none/python-this-device-only"] == "this-device-only refused"
    assert seen["none/python-portable"] == "portable none"


def test_a_system_services_state_directory_copied_to_another_machine_reads_copied(machines, tmp_path):
    """A service (StateDirectory=, no session bus): its store in $STATE_DIRECTORY/deviceid is sealed
    like any other; the directory copied to another machine reads COPIED, and at home the ID."""
    a, b = machines("tdo-service-a"), machines("tdo-service-b")

    def service(machine, state):
        machine_id = machine.tpm.dir / "machine-id"
        if not machine_id.exists():
            machine_id.write_text(os.urandom(16).hex() + "\n")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("XDG_", "DBUS_", "DEVICEID_BACKEND", "DEVICEID_STORE", "DEVICEID_PROTECTION"))}
        env.update(STATE_DIRECTORY=str(state), DEVICEID_PROTECTION="this-device-only", DEVICEID_TPM_TCTI=machine.tpm.tcti,
                   DEVICEID_MACHINE_ID_PATH=str(machine_id), HOME=str(tmp_path))
        return subprocess.run([cli_path(), "--json", "get", APP], env=env, capture_output=True, text=True, timeout=60)

    state = tmp_path / "var-lib" / "example"
    state.mkdir(parents=True, mode=0o755)
    first = service(a, state)
    assert first.returncode == 0, first.stderr
    id_a = json.loads(first.stdout)["id"]
    assert id_a.encode() not in b"".join(p.read_bytes() for p in (state / "deviceid").iterdir())
    copied = tmp_path / "other-host" / "example"
    shutil.copytree(state, copied, symlinks=True)
    there = service(b, copied)
    assert there.returncode == COPIED_EXIT and json.loads(there.stderr.splitlines()[-1])["error"]["name"] == "COPIED", there
    home = service(a, state)
    assert home.returncode == 0 and json.loads(home.stdout)["id"] == id_a, home.stderr


def test_a_portable_secret_that_begins_as_an_envelope_is_refused_and_a_sealed_one_has_its_limit(tmp_path):
    """A lookup opens whatever begins with the envelope's magic: a portable secret that does is
    refused rather than misread; a this-device-only secret leaves room for its seal."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEVICEID_", "DBUS_"))}
    env.update(DEVICEID_BACKEND="file", DEVICEID_STORE_DIR=str(tmp_path / "store"),
               DEVICEID_TPM_TCTI=f"swtpm:path={tmp_path / 'no-tpm.sock'}")
    def store(data, *options):
        return subprocess.run([cli_path(), "--json", *options, "secret", "store", SERVICE, ACCOUNT], env=env,
                              input=data, capture_output=True, timeout=60)
    refused = store(b"DIDTDO1\0" + b"x" * 200)
    assert refused.returncode == 11 and b"DIDTDO1" in refused.stderr, refused
    too_large = store(b"x" * (65536 - 139), "--protection", "this-device-only")
    assert too_large.returncode == 21 and b"at most 65396 bytes" in too_large.stderr, too_large
    assert store(b"DIDTDO2" + b"x" * 200).returncode == 0
