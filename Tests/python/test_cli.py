"""The deviceid command: output, exit codes, and agreement with every other door."""
import json
import os
import re

import pytest

import deviceid
from conftest import KEYRING_CONTROL, UUID_V4, run

UUID = UUID_V4


@pytest.mark.parametrize("args", [
    [], ["frobnicate"], ["get"], ["get", "a", "b"], ["reset"], ["secret"], ["secret", "store", "s"],
    ["secret", "store", "s", "a", "the-secret-on-argv"], ["secret", "peek", "s", "a"], ["doctor", "x"],
    ["--backend", "cloud", "get", "a"], ["--backend"], ["--timeout", "0", "get", "a"],
    ["--timeout", "soon", "get", "a"], ["--store-dir", "relative", "get", "a"], ["--colour", "get", "a"],
])
def test_usage_errors_exit_2_with_usage_on_stderr(cli, store, args):
    result = run([cli] + args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("deviceid: ")
    assert "usage: deviceid" in result.stderr
    assert "Traceback" not in result.stderr and "Fatal error" not in result.stderr


def test_invalid_names_exit_11(cli, store):
    for bad in ["", "a" * 256, "tab\there"]:
        result = run([cli, "get", bad])
        assert result.returncode == 11, result.stderr
        assert "invalid argument" in result.stderr


def test_get_text_and_json(cli, store):
    text = run([cli, "--backend", "file", "get", "com.example.cli"])
    assert text.returncode == 0 and UUID.match(text.stdout.strip())
    as_json = run([cli, "--json", "--backend=file", "get", "com.example.cli"])
    parsed = json.loads(as_json.stdout)
    assert parsed == {"app_id": "com.example.cli", "id": text.stdout.strip(), "source": "file",
                      "device_changed": False, "weak": False, "limited": False, "file_only": False, "repaired": False,
                      "mirrored": False}


def test_an_override_on_the_command_line_replaces_an_invalid_environment_value(cli, store):
    env = {"DEVICEID_BACKEND": "bogus"}
    assert run([cli, "--backend", "file", "get", "override.app"], env=env).returncode == 0
    refused = run([cli, "get", "override.app"], env=env)
    assert refused.returncode == 11 and "DEVICEID_BACKEND=bogus" in refused.stderr


def test_reset_then_new_id(cli, store):
    first = run([cli, "--backend", "file", "get", "app"]).stdout
    assert run([cli, "--backend", "file", "reset", "app"]).returncode == 0
    assert run([cli, "--backend", "file", "get", "app"]).stdout != first


def test_secret_commands_read_stdin_and_report_not_found(cli, store):
    stored = run([cli, "--backend", "file", "secret", "store", "svc", "acct"], input=b"\x00raw\nbytes\n")
    assert stored.returncode == 0, stored.stderr
    looked = run([cli, "--backend", "file", "secret", "lookup", "svc", "acct"], input=b"")
    assert looked.stdout == b"\x00raw\nbytes\n"
    assert run([cli, "--backend", "file", "secret", "delete", "svc", "acct"]).returncode == 0
    missing = run([cli, "--backend", "file", "--json", "secret", "lookup", "svc", "acct"])
    assert missing.returncode == 1
    assert json.loads(missing.stderr)["error"]["name"] == "NOT_FOUND"
    assert run([cli, "--backend", "file", "secret", "delete", "svc", "acct"]).returncode == 1


def test_corrupt_file_exits_17_and_is_left_alone(cli, store):
    assert run([cli, "--backend", "file", "get", "app"]).returncode == 0
    (path,) = store.glob("id-*")
    damaged = path.read_bytes()[:-1] + b"\x00"
    path.write_bytes(damaged)
    result = run([cli, "--backend", "file", "get", "app"])
    assert result.returncode == 17
    assert "corrupt" in result.stderr
    assert path.read_bytes() == damaged


def test_doctor_reports_each_store(cli, store, keyring):
    result = run([cli, "--json", "doctor"])
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    names = {c["name"]: c["ok"] for c in report["checks"]}
    assert names == {"configuration": True, "session bus": True, "secret service": True,
                     "default collection": True, "keyring round trip": True, "file store": True}
    assert report["answering"] == "keyring+file" and report["healthy"] is True
    assert "provided by GNOME Keyring" in result.stdout
    assert run(["secret-tool", "search", "service", "deviceid.doctor"]).stdout == "", "the probe item is gone"
    run([KEYRING_CONTROL, "lock"])
    locked = run([cli, "--json", "doctor"])
    assert locked.returncode == 15, "a locked keyring fails the doctor: new IDs could not be minted"
    report = json.loads(locked.stdout)
    assert report["answering"] == "file" and report["healthy"] is False
    assert {c["name"]: c["ok"] for c in report["checks"]}["default collection"] is False


def test_every_language_gives_the_same_id(cli, c_example, swift_example, store, keyring):
    app = "com.example.everywhere"
    from_python = deviceid.get(app)
    from_cli = run([cli, "get", app]).stdout.strip()
    from_c = run([c_example, app]).stdout.split()
    from_swift = run([swift_example, app]).stdout.split()
    assert from_cli == from_python
    assert from_c == [from_python, "keyring"]
    assert from_swift == [from_python, "keyring"]
    looked = run(["secret-tool", "lookup", "service", "deviceid.app", "username", app])
    assert looked.stdout.splitlines()[0] == from_python


def test_unreadable_standard_input_is_an_io_error_not_a_crash(cli, store):
    import subprocess

    directory = os.open("/", os.O_RDONLY)  # read(2) on a directory fails with EISDIR
    try:
        result = subprocess.run([cli, "--backend", "file", "secret", "store", "s", "a"], stdin=directory,
                                capture_output=True, text=True)
    finally:
        os.close(directory)
    assert result.returncode == 18
    assert result.stderr.startswith("deviceid: ") and "Is a directory" in result.stderr
    closed = subprocess.run([cli, "--backend", "file", "secret", "store", "s", "a"], stdin=subprocess.DEVNULL,
                            capture_output=True, text=True)
    assert closed.returncode == 0, "an empty secret from an empty stdin is allowed"
