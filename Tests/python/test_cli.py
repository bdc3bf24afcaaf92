"""The deviceid command: output, exit codes, and agreement with every other door."""
import json
import os
import re

import pytest

import deviceid
from conftest import KEYRING_CONTROL, ROOT, UUID_V4, run

UUID = UUID_V4


@pytest.mark.parametrize("args", [
    [], ["frobnicate"], ["get"], ["get", "a", "b"], ["reset"], ["secret"], ["secret", "store", "s"],
    ["secret", "store", "s", "a", "the-secret-on-argv"], ["secret", "peek", "s", "a"], ["doctor", "x"],
    ["--backend", "cloud", "get", "a"], ["--backend"], ["--timeout", "0", "get", "a"],
    ["--timeout", "soon", "get", "a"], ["--store-dir", "relative", "get", "a"], ["--colour", "get", "a"],
])
def test_usage_errors_exit_2_with_one_line_and_a_hint(cli, store, args):
    result = run([cli] + args)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("deviceid: "), result.stderr
    assert re.fullmatch(r"Try 'deviceid (--help|help [a-z-]+)'\.", lines[1]), lines[1]
    command = next((a for a in args if a in COMMANDS), None)
    if command and not any(a.startswith("--") for a in args):
        assert lines[1] == f"Try 'deviceid help {command}'.", "the hint names the command's own help"
    json_result = run([cli, "--json"] + args)
    assert json_result.returncode == 2 and json_result.stdout == ""
    error = json.loads(json_result.stderr)["error"]
    assert error["name"] == "USAGE" and error["message"] == lines[0][len("deviceid: "):]


COMMANDS = ["get", "reset", "secret", "vendor", "advertising", "openudid", "uuid", "mac", "mac-md5", "hash",
            "machine-id", "product-uuid", "hardware-id", "attest", "assert", "tpm-pin", "doctor", "version", "help"]


def test_help_forms(cli):
    full = run([cli, "--help"])
    assert full.returncode == 0 and full.stdout.startswith("usage: deviceid [OPTIONS] COMMAND")
    assert run([cli, "-h"]).stdout == full.stdout == run([cli, "help"]).stdout
    listed = re.findall(r"^  ([a-z][a-z0-9-]*) ", full.stdout.split("options:")[0], re.M)
    assert sorted(set(listed)) == sorted(COMMANDS), "every command is listed, and only those"
    for command in COMMANDS:
        own = run([cli, "help", command])
        assert own.returncode == 0 and own.stdout != full.stdout
        assert f"deviceid [OPTIONS] {command}" in own.stdout, own.stdout
        assert len(own.stdout.splitlines()) < len(full.stdout.splitlines())
        if command != "help":
            assert run([cli, command, "--help"]).stdout == own.stdout
            assert run([cli, command, "-h"]).stdout == own.stdout
    as_json = json.loads(run([cli, "--json", "help", "get"]).stdout)
    assert as_json["command"] == "get" and "APP_ID" in as_json["help"]
    unknown = run([cli, "help", "frobnicate"])
    assert unknown.returncode == 2 and "not a command" in unknown.stderr


def test_every_command_answers_json_on_stdout(cli, store, keyring):
    calls = [
        (["get", "j.app"], None), (["reset", "j.app"], None),
        (["secret", "store", "j.s", "j.a"], "value"), (["secret", "lookup", "j.s", "j.a"], None),
        (["secret", "delete", "j.s", "j.a"], None),
        (["vendor", "get", "j.v"], None), (["vendor", "reset", "j.v"], None),
        (["advertising"], None), (["advertising", "reset"], None), (["advertising", "limit"], None),
        (["advertising", "limit", "on"], None), (["advertising", "limit", "off"], None),
        (["openudid", "get", "j.app"], None), (["openudid", "opt-out", "j.app", "on"], None),
        (["openudid", "opt-out", "j.app", "off"], None), (["openudid", "reset"], None),
        (["uuid"], None), (["hash", "sha256"], "x"), (["machine-id", "app-specific", "j.app"], None),
        (["doctor"], None), (["version"], None), (["help"], None), (["tpm-pin", "forget"], None),
    ]
    for args, stdin in calls:
        result = run([cli, "--json"] + args, input=stdin)
        assert result.returncode == 0, (args, result.stderr)
        assert isinstance(json.loads(result.stdout), dict), (args, result.stdout)
    assert json.loads(run([cli, "--json", "secret", "store", "j.s", "j.a"], input="v").stdout) == \
        {"service": "j.s", "account": "j.a", "stored": True, "location": "keyring"}
    assert json.loads(run([cli, "--json", "secret", "delete", "j.s", "j.a"]).stdout)["deleted"] is True
    # No pin in a fresh store (the call asks no TPM: it removes a file, or finds none).
    assert json.loads(run([cli, "--json", "tpm-pin", "forget"], env={"DEVICEID_TPM_TCTI": "device"}).stdout) == \
        {"tpm": "device:/dev/tpmrm0", "forgotten": False}


def test_bash_completion_completes_commands_and_their_words():
    script = ROOT / "completions" / "deviceid.bash"
    def complete(*words):
        line = " ".join(f"'{w}'" for w in words)
        out = run(["bash", "-c", f"source '{script}'; COMP_WORDS=(deviceid {line}); COMP_CWORD={len(words)}; "
                                 "_deviceid; printf '%s\\n' \"${COMPREPLY[@]}\""])
        assert out.returncode == 0, out.stderr
        return out.stdout.split()
    assert complete("sec") == ["secret"]
    assert complete("secret", "") == ["store", "lookup", "delete"]
    assert complete("--backend", "") == ["auto", "secret-service", "file"]
    assert complete("--json", "hash", "") == ["md5", "sha256"]
    assert "--interactive" in complete("--int")
    assert complete("hard") == ["hardware-id"]
    assert complete("attest", "") == ["enrol", "activate", "certify", "webauthn"]
    assert complete("--nonce", "AAAA", "attest", "") == ["enrol", "activate", "certify", "webauthn"]
    assert complete("--client-data-hash", "AAAA", "ass") == ["assert"]


def test_zsh_and_fish_completions_parse():
    assert run(["zsh", "-n", str(ROOT / "completions" / "_deviceid")]).returncode == 0
    result = run(["fish", "--no-execute", str(ROOT / "completions" / "deviceid.fish")])
    assert result.returncode == 0, result.stderr


def test_invalid_names_exit_11(cli, store):
    for bad in ["a" * 256, "tab\there"]:
        result = run([cli, "get", bad])
        assert result.returncode == 11, result.stderr
        assert "invalid argument" in result.stderr


def test_get_text_and_json(cli, store):
    text = run([cli, "--backend", "file", "get", "com.example.cli"])
    assert text.returncode == 0 and UUID.match(text.stdout.strip())
    as_json = run([cli, "--json", "--backend=file", "get", "com.example.cli"])
    parsed = json.loads(as_json.stdout)
    # Weak and where it lives depend on where the suite runs (a container with its image's machine
    # ID is weak; its store is the container's own files): doctor says which.
    environment = json.loads(run([cli, "--json", "--backend=file", "doctor"]).stdout)["environment"]
    assert parsed == {"app_id": "com.example.cli", "id": text.stdout.strip(), "source": "file",
                      "device_changed": False, "weak": environment["machine_id"]["weak"], "limited": False,
                      "file_only": False, "repaired": False, "mirrored": False, "provisional": False,
                      "app_data_only": False, "anchor_changed": False, "location": environment["store"]["location"]}


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
    original = path.read_bytes()
    damaged = original[:-1] + bytes([original[-1] ^ 0xFF])  # the checksum's last byte, always changed
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
                     "default collection": True, "keyring round trip": True, "file store": True,
                     "environment": True, "protection": True, "tpm": False}
    assert report["answering"] == "keyring+file" and report["healthy"] is True
    assert report["environment"]["protection"]["binding"] == "none", "portable, the default: nothing binds it"
    assert report["environment"]["stable_id"]["location"] == "keyring", "the keyring answers here"
    assert "provided by GNOME Keyring" in result.stdout
    tpm = [c for c in report["checks"] if c["name"] == "tpm"][0]
    assert "hardware-id and attest cannot work" in tpm["detail"], "no TPM here: said, and not held against the stores"
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
    assert closed.returncode == 11, closed.stderr


def test_an_empty_standard_input_stores_nothing_unless_an_empty_secret_is_meant(cli, store):
    before = run([cli, "--backend", "file", "secret", "store", "s", "a"], input="kept")
    assert before.returncode == 0, before.stderr
    empty = run([cli, "--backend", "file", "secret", "store", "s", "a"], input="")
    assert empty.returncode == 11
    assert empty.stderr == ("deviceid: invalid argument: the secret read from standard input is empty; nothing was "
                            "stored (--allow-empty stores it as it is)\n")
    line_break = run([cli, "--backend", "file", "secret", "store", "s", "a"], input="\n")  # echo "$UNSET" |
    assert line_break.returncode == 11
    assert "is a lone line break; nothing was stored" in line_break.stderr
    assert run([cli, "--backend", "file", "secret", "lookup", "s", "a"]).stdout == "kept"
    as_json = run([cli, "--json", "--backend", "file", "secret", "store", "s", "a"], input="")
    assert json.loads(as_json.stderr)["error"]["name"] == "INVALID_ARGUMENT"
    meant = run([cli, "--backend", "file", "secret", "store", "s", "a", "--allow-empty"], input="")
    assert meant.returncode == 0, meant.stderr
    looked = run([cli, "--backend", "file", "secret", "lookup", "s", "a"])
    assert (looked.returncode, looked.stdout) == (0, "")
