"""Store paths are bytes (issue 35, case 3): a path from the environment that is not UTF-8 is refused
with words, as --store-dir refuses it, and nothing is created. 0.3.0 read such variables through
String(cString:), which turns the bytes into U+FFFD: `.../x\\xfe` and `.../x\\xff` shared one store,
created at `.../x\\uFFFD` beside both. (Mount points compared as bytes and the mount table read
whole: Tests/python/test_sandbox.py, the container cases, and SurroundingsTests.)"""
import json
import os

import pytest

from conftest import NOBODY, as_nobody, run

INVALID_ARGUMENT_EXIT = 11   # docs/cli-json.schema.json: 10 - status, INVALID_ARGUMENT is -1


def refused(result, variable):
    assert result.returncode == INVALID_ARGUMENT_EXIT, (result.returncode, result.stdout, result.stderr)
    error = json.loads(result.stderr.strip().splitlines()[-1])["error"]
    assert error["name"] == "INVALID_ARGUMENT" and f"{variable} is not valid UTF-8" in error["message"], error


def names(directory):
    return sorted(os.fsencode(n) for n in os.listdir(os.fsencode(directory)))


@pytest.mark.parametrize("variable", ["DEVICEID_STORE_DIR", "STATE_DIRECTORY", "XDG_DATA_HOME"])
def test_a_store_path_that_is_not_utf8_is_refused_and_nothing_is_made(cli, tmp_path, variable):
    for byte in (b"\xfe", b"\xff"):
        path = os.fsdecode(os.fsencode(str(tmp_path)) + b"/x" + byte)
        env = {"DEVICEID_BACKEND": "file", "DEVICEID_STORE_DIR": None, "STATE_DIRECTORY": None, "XDG_DATA_HOME": None}
        env[variable] = path
        refused(run([cli, "--json", "get", "com.example.app"], env=env), variable)
    assert names(tmp_path) == [], "no directory made, under any name"


def test_a_home_that_is_not_utf8_is_refused_and_nothing_is_made(cli, shared_tmp):
    # As nobody: root's default store is /var/lib/deviceid, whatever HOME says.
    base = os.path.join(shared_tmp, "homes")
    os.mkdir(base)
    os.chown(base, NOBODY, NOBODY)
    home = os.fsdecode(os.fsencode(base) + b"/x\xfe")
    env = {"HOME": home, "XDG_DATA_HOME": None, "STATE_DIRECTORY": None, "DEVICEID_STORE_DIR": None,
           "DEVICEID_BACKEND": "file"}
    refused(as_nobody([cli, "--json", "get", "com.example.app"], env=env), "HOME")
    assert names(base) == [], "no home made, under any name"


def test_a_utf8_path_is_kept_byte_for_byte(cli, tmp_path):
    """NFD and NFC spellings of one name are two directories: each keeps its own store."""
    ids = {}
    for spelling in ("cafe\u0301", "caf\u00e9"):
        env = {"DEVICEID_STORE_DIR": str(tmp_path / spelling), "DEVICEID_BACKEND": "file"}
        got = run([cli, "--json", "get", "com.example.app"], env=env)
        assert got.returncode == 0, got.stderr
        ids[spelling] = json.loads(got.stdout)["id"]
    assert names(tmp_path) == sorted(s.encode() for s in ids)
    assert len(set(ids.values())) == 2, ids


def odd_and_folded(tmp_path, make):
    """`make` run on tmp_path/x\\xfe (what the variable names) and on tmp_path/x\\uFFFD (a bystander
    at the path 0.3.0 folded the name to); the first's path, as the environment carries it."""
    odd, folded = os.fsencode(str(tmp_path)) + b"/x\xfe", os.fsencode(str(tmp_path)) + "/x\ufffd".encode()
    make(odd, b"0123456789abcdef0123456789abcdef\n")
    make(folded, b"fedcba9876543210fedcba9876543210\n")
    return os.fsdecode(odd), folded


def test_a_machine_id_path_that_is_not_utf8_is_refused(cli, tmp_path):
    """0.3.0 read the machine ID of the bystander at the folded path."""
    def write(path, text):
        with open(path, "wb") as f:
            f.write(text)
    odd, _ = odd_and_folded(tmp_path, write)
    refused(run([cli, "--json", "machine-id", "raw"], env={"DEVICEID_MACHINE_ID_PATH": odd}), "DEVICEID_MACHINE_ID_PATH")


@pytest.mark.parametrize("driver", [b"swtpm:path=", b"device:"])
def test_a_tpm_path_that_is_not_utf8_is_refused(cli, tmp_path, driver):
    """0.3.0 asked the TPM at the folded path, where another program's socket would have answered."""
    odd, _ = odd_and_folded(tmp_path, lambda path, _: open(path, "wb").close())
    tcti = os.fsdecode(driver + os.fsencode(odd))
    refused(run([cli, "--json", "hardware-id", "com.example.app"], env={"DEVICEID_TPM_TCTI": tcti}), "DEVICEID_TPM_TCTI")


def test_a_sysfs_root_that_is_not_utf8_is_refused(cli, tmp_path):
    odd, _ = odd_and_folded(tmp_path, lambda path, _: os.makedirs(path + b"/class/net"))
    refused(run([cli, "--json", "mac"], env={"DEVICEID_SYSFS_ROOT": odd}), "DEVICEID_SYSFS_ROOT")


def test_a_runtime_directory_that_is_not_utf8_is_no_runtime_directory(cli, tmp_path):
    """The file store's session lock and KeePassXC's write record live in $XDG_RUNTIME_DIR: one whose
    name is not UTF-8 is none (0.3.0 made deviceid.lock in the bystander at the folded path), and
    without DBUS_SESSION_BUS_ADDRESS the session bus it would name is refused with words."""
    odd, folded = odd_and_folded(tmp_path, lambda path, _: os.mkdir(path, 0o700))
    env = {"XDG_RUNTIME_DIR": odd, "DBUS_SESSION_BUS_ADDRESS": None, "DEVICEID_STORE_DIR": str(tmp_path / "store")}
    got = run([cli, "--json", "--backend", "file", "get", "com.example.app"], env=env)
    assert got.returncode == 0 and json.loads(got.stdout)["id"], got.stderr
    assert names(os.fsdecode(folded)) == [] and names(odd) == [], "no lock made in either"
    refused(run([cli, "--json", "--backend", "secret-service", "get", "com.example.app"], env=env), "XDG_RUNTIME_DIR")


def test_a_home_in_the_password_database_that_is_not_utf8_is_refused(cli, shared_tmp):
    """Without HOME the store is under the password database's home: nobody's is …/x\\xfe here (a
    copy of /etc/passwd bound over it in a mount namespace of this test's own)."""
    odd = os.fsencode(shared_tmp) + b"/x\xfe"
    passwd = os.path.join(shared_tmp, "passwd")
    with open("/etc/passwd", "rb") as real, open(passwd, "wb") as fake:
        for line in real.read().splitlines(keepends=True):
            fields = line.split(b":")
            if len(fields) == 7 and fields[2] == str(NOBODY).encode():
                fields[5] = odd
            fake.write(b":".join(fields))
    script = (f"mount --bind {passwd} /etc/passwd && exec setpriv --reuid={NOBODY} --regid={NOBODY} --clear-groups "
              f"{cli} --json get com.example.app")
    env = {"HOME": None, "XDG_DATA_HOME": None, "STATE_DIRECTORY": None, "DEVICEID_STORE_DIR": None,
           "DEVICEID_BACKEND": "file"}
    result = run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script], env=env)
    assert result.returncode == INVALID_ARGUMENT_EXIT, (result.returncode, result.stdout, result.stderr)
    error = json.loads(result.stderr.strip().splitlines()[-1])["error"]
    assert "in the password database is not valid UTF-8" in error["message"], error
    assert names(shared_tmp) == [b"passwd"], "no home made, under any name"
