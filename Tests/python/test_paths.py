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
