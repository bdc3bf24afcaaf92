"""Mirror-first answers (docs/STATE.md, rule 5): in auto, a mirror record the keyring
confirmed within the re-check interval answers a process's first lookup without D-Bus; the
keyring is asked otherwise, on reset and on every write. Real keyring, real processes."""
import json
import re
import subprocess
import sys

from conftest import ROOT, UUID_V4_TEXT, in_fresh_keyring, run

UUID = UUID_V4_TEXT


def test_a_frozen_keyring_does_not_stall_a_confirmed_mirror(cli):
    result = in_fresh_keyring(f"""
        export DEVICEID_STORE_DIR=$HOME/store
        echo "minted: $({cli} get app)"
        pid=$(keyring_pid)
        kill -STOP $pid
        echo "mirror: $({cli} --json --timeout 1000 get app)"
        echo "recheck: $(DEVICEID_MIRROR_RECHECK_S=0 {cli} --json --timeout 1000 get app)"
        {cli} --timeout 1000 reset app; echo "reset rc=$?"
        {cli} --timeout 1000 get other.app; echo "unconfirmed rc=$?"
        kill -CONT $pid
        echo "after: $({cli} get app)"
    """)
    out = result.stdout
    minted = re.search(rf"minted: ({UUID})", out).group(1)
    mirror = json.loads(re.search(r"mirror: (\{.*\})", out).group(1))
    assert mirror["id"] == minted and mirror["mirrored"] is True and mirror["source"] == "keyring", out
    recheck = json.loads(re.search(r"recheck: (\{.*\})", out).group(1))
    assert recheck["id"] == minted and recheck["mirrored"] is False and recheck["source"] == "file", \
        "with no interval the keyring is asked: it times out and the mirror answers as before"
    assert "reset rc=16" in out, "a reset always asks the keyring"
    assert "unconfirmed rc=16" in out, "nothing minted while the keyring cannot answer"
    assert f"after: {minted}" in out


def test_without_a_session_bus_a_confirmed_mirror_still_answers_for_the_keyring(cli):
    result = in_fresh_keyring(f"""
        export DEVICEID_STORE_DIR=$HOME/store
        echo "minted: $({cli} get app)"
        echo "no bus: $(env -u DBUS_SESSION_BUS_ADDRESS XDG_RUNTIME_DIR=$HOME/none {cli} --json get app)"
    """)
    minted = re.search(rf"minted: ({UUID})", result.stdout).group(1)
    answer = json.loads(re.search(r"no bus: (\{.*\})", result.stdout).group(1))
    assert answer["id"] == minted and answer["mirrored"] is True


def test_the_c_abi_and_python_report_the_mirrored_flag(cli, store, keyring):
    minted = run([cli, "get", "com.example.mirror"]).stdout.strip()
    code = ("import deviceid; i = deviceid.get_info('com.example.mirror'); "
            "print(i.id, i.source, i.mirrored, deviceid._c.FLAG_MIRRORED)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == [minted, "keyring", "True", "32"]
    header = (ROOT / "include" / "deviceid.h").read_text()
    assert re.search(r"#define DEVICEID_FLAG_MIRRORED\s+32u", header)


def test_the_mirror_keeps_its_confirmation_in_a_field_the_file_backend_ignores(cli, store, keyring):
    minted = run([cli, "get", "com.example.fields"]).stdout.strip()
    answer = json.loads(run([cli, "--json", "--backend", "file", "get", "com.example.fields"]).stdout)
    assert answer["id"] == minted and answer["source"] == "file" and answer["mirrored"] is False


def test_an_invalid_recheck_interval_is_a_clear_error(cli, store):
    for value in ["abc", "-1", "2592001"]:
        result = run([cli, "get", "app"], env={"DEVICEID_MIRROR_RECHECK_S": value})
        assert result.returncode != 0
        assert f"DEVICEID_MIRROR_RECHECK_S={value} is not a number of seconds from 0 to 2592000" in result.stderr
