"""System services (docs/ENVIRONMENTS.md "System services"): no login session, no keyring, a state directory
from systemd. systemd is not PID 1 here, so each test builds the environment a unit gives its
process — the user, $STATE_DIRECTORY, the DynamicUser= directory layout — and runs the real CLI."""
import json
import os
import shutil
import subprocess

from conftest import NOBODY, ROOT, UUID_V4, as_nobody, run

# What a system service's process has: no HOME of its own, no session, no XDG variables.
SERVICE_ENV = {k: None for k in ("HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS",
                                  "DEVICEID_STORE_DIR", "DEVICEID_BACKEND", "STATE_DIRECTORY")}


def service_env(**extra):
    return dict(SERVICE_ENV, **extra)


def owned_by_nobody(path, mode=0o700):
    os.makedirs(path)
    os.chown(path, NOBODY, NOBODY)
    os.chmod(path, mode)
    return path


def test_state_directory_is_the_default_store(cli, shared_tmp):
    state = owned_by_nobody(os.path.join(shared_tmp, "state"))
    env = service_env(HOME="/nonexistent", STATE_DIRECTORY=f"{state}:{shared_tmp}/second-entry")
    first = as_nobody([cli, "--json", "get", "com.example.service"], env=env)
    assert first.returncode == 0, first.stderr
    answer = json.loads(first.stdout)
    assert UUID_V4.match(answer["id"]) and answer["source"] == "created"
    items = os.listdir(os.path.join(state, "deviceid"))
    assert any(n.startswith("id-") for n in items), "kept in $STATE_DIRECTORY/deviceid (its first entry)"
    assert not os.path.exists(f"{shared_tmp}/second-entry")
    again = as_nobody([cli, "get", "com.example.service"], env=env)
    assert again.stdout.strip() == answer["id"], "the same ID on the next start"
    doctor = as_nobody([cli, "doctor"], env=env)
    assert doctor.returncode == 0 and f"{state}/deviceid" in doctor.stdout, doctor.stdout


def test_the_dynamic_user_layout_is_followed(cli, shared_tmp):
    # As the service sees it: /var/lib/NAME is root's link to private/NAME, the directory is the
    # dynamic user's, and private/ belongs to root.
    lib = os.path.join(shared_tmp, "var-lib")
    os.makedirs(os.path.join(lib, "private"), mode=0o755)
    os.chmod(os.path.join(lib, "private"), 0o755)
    owned_by_nobody(os.path.join(lib, "private", "svc"))
    os.symlink("private/svc", os.path.join(lib, "svc"))
    env = service_env(STATE_DIRECTORY=os.path.join(lib, "svc"))
    result = as_nobody([cli, "get", "com.example.dynamic"], env=env)
    assert result.returncode == 0, result.stderr
    assert os.listdir(os.path.join(lib, "private", "svc", "deviceid")), "written through the link"
    assert as_nobody([cli, "get", "com.example.dynamic"], env=env).stdout == result.stdout


def test_without_a_usable_store_doctor_fails_and_every_error_says_what_to_do(cli):
    env = service_env(HOME="/nonexistent")
    doctor = as_nobody([cli, "doctor"], env=env)
    assert doctor.returncode == 15, doctor.stdout
    cause = f"the home directory /nonexistent of uid {NOBODY} does not exist"
    assert "FAIL file store: /nonexistent/.local/share/deviceid cannot be created: " + cause in doctor.stdout, \
        "the missing home is named, not 'Permission denied'"
    get = as_nobody([cli, "get", "com.example.nohome"], env=env)
    assert get.returncode == 19 and cause in get.stderr and "Permission denied" not in get.stderr, get.stderr
    for hint in ("DEVICEID_STORE_DIR", "StateDirectory="):
        assert hint in get.stderr and hint in doctor.stdout, (hint, get.stderr)


def test_a_permission_error_under_a_private_directory_suggests_the_fix(cli, shared_tmp):
    closed = os.path.join(shared_tmp, "closed")
    os.mkdir(closed, 0o700)  # root's
    result = as_nobody([cli, "--store-dir", f"{closed}/store", "get", "x"], env=service_env())
    assert result.returncode == 19
    assert "Permission denied" in result.stderr and "StateDirectory=" in result.stderr, result.stderr


# Root's home is the password database's (/root), whatever $HOME says: the test's own is mounted there.
ROOT_WITHOUT_SESSION = """set -eu
mount -t tmpfs -o mode=0755 none /var/lib
mount --bind "$1" /root
export HOME=/root
cli=$2
echo "id=$($cli get com.example.root)"
ls /var/lib/deviceid | grep -c '^id-' | sed 's/^/files=/'
"""


def test_root_without_a_session_keeps_a_machine_wide_store(cli, tmp_path):
    home = tmp_path / "root-home"
    home.mkdir()
    script = tmp_path / "root.sh"
    script.write_text(ROOT_WITHOUT_SESSION)
    result = run(["unshare", "--mount", "--propagation", "private", "bash", str(script), str(home), cli],
                 env=service_env())
    assert result.returncode == 0, result.stderr
    assert "files=1" in result.stdout, "kept under /var/lib/deviceid"
    assert not (home / ".local").exists()


def test_an_id_010_kept_in_roots_home_is_still_found(cli, tmp_path):
    home = tmp_path / "root-home"
    legacy = home / ".local" / "share" / "deviceid"
    old = run([cli, "--store-dir", str(legacy), "get", "com.example.root"]).stdout.strip()
    assert UUID_V4.match(old)
    script = tmp_path / "root.sh"
    script.write_text(ROOT_WITHOUT_SESSION)
    result = run(["unshare", "--mount", "--propagation", "private", "bash", str(script), str(home), cli],
                 env=service_env())
    assert f"id={old}" in result.stdout, result.stdout + result.stderr
    assert "files=1" in result.stdout, "moved into /var/lib/deviceid, the one store of root (docs/STATE.md, I4)"


def test_the_example_unit_verifies_and_its_command_runs_as_the_unit_would(cli, shared_tmp):
    """The unit as it ships, verified where `make install` puts the command (/usr/local/bin, bound
    here in a mount namespace) and failing verification where there is none: systemd resolves the
    bare name itself. 0.3.0's /usr/bin/deviceid failed after the README's /usr/local install."""
    unit_path = ROOT / "examples" / "systemd" / "deviceid-example.service"
    unit = unit_path.read_text()
    assert "StateDirectory=deviceid-example" in unit and "DynamicUser=yes" in unit
    bin_dir = os.path.join(shared_tmp, "bin")
    os.mkdir(bin_dir)
    os.symlink(cli, os.path.join(bin_dir, "deviceid"))
    verify = f"systemd-analyze verify --man=no {unit_path}"
    for where, expect in ((bin_dir, 0), (os.path.join(shared_tmp, "empty"), 1)):
        os.makedirs(where, exist_ok=True)
        result = run(["unshare", "--mount", "--propagation", "private", "bash", "-c",
                      f"mount --bind {where} /usr/local/bin && [ ! -e /usr/bin/deviceid ] && {verify}"])
        assert (result.returncode != 0) == bool(expect), (where, result.stderr)
    assert "deviceid" in result.stderr, result.stderr
    state = owned_by_nobody(os.path.join(shared_tmp, "deviceid-example"))
    command = next(l for l in unit.splitlines() if l.startswith("ExecStart=")).split("=", 1)[1].split()
    env = service_env(STATE_DIRECTORY=state, DEVICEID_BACKEND="file")
    result = as_nobody([cli] + command[1:], env=env)
    assert result.returncode == 0 and UUID_V4.match(result.stdout.strip()), result.stderr


DEFAULT_ORDER = ["$DEVICEID_STORE_DIR", "$STATE_DIRECTORY/deviceid", "$XDG_DATA_HOME/deviceid", "/var/lib/deviceid",
                 "~/.local/share/deviceid"]


def test_the_store_directory_rules_are_the_documented_ones_in_order(cli, shared_tmp):
    """One owner reads DEVICEID_STORE_DIR (Configuration.resolved); the default is chosen by
    StoreDirectory.defaultLocation. Each rule wins over the ones after it, as the header
    (deviceid_set_store_dir) lists them."""
    base = service_env(HOME="/h", XDG_DATA_HOME="/x", STATE_DIRECTORY="/s:/t", DEVICEID_STORE_DIR="/e")

    def chosen(env, user="root"):
        argv = [cli, "--backend", "file", "doctor"]
        if user == "root":
            # root's default is machine-wide: looked at in a private /var/lib, never the real one.
            result = run(["unshare", "--mount", "sh", "-c", 'mount -t tmpfs none /var/lib && exec "$@"', "sh", *argv],
                         env=env)
        else:
            result = as_nobody(argv, env=env)
        line = next((l for l in result.stdout.splitlines() if "file store:" in l), result.stdout + result.stderr)
        return line.split("file store: ", 1)[-1].split(" ", 1)[0]

    assert chosen(base) == "/e"
    assert chosen(dict(base, DEVICEID_STORE_DIR=None)) == "/s/deviceid"
    assert chosen(dict(base, DEVICEID_STORE_DIR=None, STATE_DIRECTORY=None)) == "/x/deviceid"
    assert chosen(dict(base, DEVICEID_STORE_DIR=None, STATE_DIRECTORY=None, XDG_DATA_HOME=None)) == "/var/lib/deviceid"
    assert chosen(dict(base, DEVICEID_STORE_DIR=None, STATE_DIRECTORY=None, XDG_DATA_HOME=None), "nobody") \
        == "/h/.local/share/deviceid"
    header = " ".join((ROOT / "include" / "deviceid.h").read_text().split())
    doc = header[header.index("Sets the file store's directory"):header.index("int deviceid_set_store_dir")]
    positions = [doc.find(rule) for rule in DEFAULT_ORDER]
    assert -1 not in positions and positions == sorted(positions), (positions, doc)


def test_an_invalid_store_dir_in_the_environment_is_reported_by_get_backend():
    """The header says deviceid_get_backend is INVALID_ARGUMENT when DEVICEID_STORE_DIR is invalid."""
    result = run(["python3", "-c", """
import ctypes, os
library = ctypes.CDLL(os.environ["DEVICEID_LIBRARY"])
print(library.deviceid_get_backend(None))
"""], env={"DEVICEID_STORE_DIR": "relative/path"})
    assert result.stdout.strip() == "-1", (result.stdout, result.stderr)
