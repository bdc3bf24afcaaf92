"""The Python package over the installed libdeviceid."""
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

import deviceid
from deviceid import _errors

from conftest import UUID_V4

HEADER = (__import__("pathlib").Path(__file__).resolve().parents[2] / "include" / "deviceid.h").read_text()


def header_defines():
    """Every `#define DEVICEID_NAME value` of include/deviceid.h with a numeric value."""
    found = {}
    for name, value in re.findall(r"^#define DEVICEID_(\w+)\s+\(?(-?\d+)U?\)?", HEADER, re.M):
        found[name] = int(value)
    return found


def test_constants_match_the_header():
    defines = header_defines()
    version = re.search(r'#define DEVICEID_VERSION_STRING "([^"]+)"', HEADER).group(1)
    assert deviceid.__version__ == version
    assert deviceid.UUID_STRING_MAX == defines["UUID_STRING_MAX"]
    assert deviceid.NAME_MAX == defines["NAME_MAX"]
    assert deviceid.SECRET_MAX == defines["SECRET_MAX"]
    flags = [name for name in defines if name.startswith("FLAG_")]
    assert "FLAG_MIRRORED" in flags and "FLAG_PROVISIONAL" in flags
    for name in flags:  # every flag of the header, so that a new one cannot be missed
        assert getattr(deviceid, name) == defines[name], name
    for name, number in deviceid.BACKENDS.items():
        assert number == defines["BACKEND_" + name.upper().replace("-", "_")], name
    assert (deviceid.FORMAT_UPPERCASE, deviceid.FORMAT_COMPACT) == (defines["FORMAT_UPPERCASE"], defines["FORMAT_COMPACT"])
    for name, number in deviceid.SCOPES.items():
        assert number == defines["SCOPE_" + name.upper()], name
    statuses = {name[2:]: value for name, value in defines.items() if name.startswith("E_")}
    assert len(statuses) == 17
    for name, value in statuses.items():
        assert deviceid.status_name(value) == name
        error = deviceid._errors.BY_STATUS[value]
        assert (error.status, error.name) == (value, name)


def test_every_status_has_one_exception_with_the_c_name():
    statuses = {int(v): n for n, v in re.findall(r"#define DEVICEID_E_(\w+)\s+\((-\d+)\)", HEADER)}
    assert statuses, "no statuses parsed from the header"
    assert {s: c.name for s, c in _errors.BY_STATUS.items()} == statuses
    for status, name in statuses.items():
        assert deviceid.status_name(status) == name
        assert deviceid.strerror(status) != "unknown status"


def test_get_is_stable_and_per_app(store):
    deviceid.set_backend("file")
    first = deviceid.get_info("com.example.py")
    assert UUID_V4.match(first.id)
    assert first.source == "created"
    assert deviceid.get("com.example.py") == first.id
    assert deviceid.get("com.example.other") != first.id
    deviceid.reset("com.example.py")
    again = deviceid.get_info("com.example.py")
    assert again.id != first.id and again.source == "created"


@pytest.mark.parametrize("bad", ["", "a" * 256, "a\0b", "new\nline", "\udc80", "del\x7f", "c1\x85control", "c1\x9f"])
def test_bad_app_ids_raise_invalid_argument(store, bad):
    with pytest.raises(deviceid.InvalidArgumentError) as caught:
        deviceid.get(bad)
    assert caught.value.status == -1 and caught.value.name == "INVALID_ARGUMENT"
    assert isinstance(caught.value, ValueError)


def test_non_string_app_id_is_a_type_error(store):
    with pytest.raises(TypeError):
        deviceid.get(b"bytes")
    with pytest.raises(TypeError):
        deviceid.store_secret("s", "a", "text, not bytes")


def test_secrets_in_the_file_store(store):
    deviceid.set_backend("file")
    assert deviceid.lookup_secret("svc", "acct") is None
    deviceid.store_secret("svc", "acct", b"\x00binary\xff\x00")
    assert deviceid.lookup_secret("svc", "acct") == b"\x00binary\xff\x00"
    deviceid.store_secret("svc", "acct", b"")
    assert deviceid.lookup_secret("svc", "acct") == b""
    assert deviceid.delete_secret("svc", "acct") is True
    assert deviceid.delete_secret("svc", "acct") is False
    with pytest.raises(deviceid.TooLargeError):
        deviceid.store_secret("svc", "acct", b"x" * (deviceid.SECRET_MAX + 1))
    with pytest.raises(deviceid.InvalidArgumentError):
        deviceid.store_secret("deviceid.app", "acct", b"x")


def test_configuration_errors(store):
    with pytest.raises(deviceid.InvalidArgumentError):
        deviceid.set_backend("cloud")
    with pytest.raises(deviceid.InvalidArgumentError):
        deviceid.set_timeout_ms(0)
    with pytest.raises(deviceid.InvalidArgumentError):
        deviceid.set_store_dir("relative")
    with pytest.raises(deviceid.InvalidArgumentError):
        deviceid.set_interactive(True, 86_400_001)
    assert deviceid.get_interactive() is False
    deviceid.set_interactive(True)
    assert deviceid.get_interactive() is True
    deviceid.set_interactive(False)
    assert deviceid.get_interactive() is False
    deviceid.set_backend("secret-service")
    assert deviceid.get_backend() == "secret-service"


def test_an_override_replaces_an_invalid_environment_value(tmp_path):
    from conftest import run

    code = """
import deviceid
try:
    deviceid.get_backend()
except deviceid.InvalidArgumentError as error:
    print("env:", error)
deviceid.set_backend("file")
print("override:", deviceid.get_backend(), len(deviceid.get("override.app")))
"""
    result = run(["python3", "-c", code], env={"DEVICEID_BACKEND": "bogus", "DEVICEID_STORE_DIR": str(tmp_path)})
    assert "env: invalid argument: DEVICEID_BACKEND=bogus" in result.stdout, result.stdout + result.stderr
    assert "override: file 36" in result.stdout


def test_secrets_in_the_keyring_interoperate_with_secret_tool(store, keyring):
    from conftest import run

    deviceid.store_secret("py-interop", "alice", b"s3cret")
    looked = run(["secret-tool", "lookup", "service", "py-interop", "username", "alice"])
    assert looked.returncode == 0 and looked.stdout == "s3cret"
    run(["secret-tool", "store", "--label=t", "service", "py-interop", "username", "bob"], input="from-tool")
    assert deviceid.lookup_secret("py-interop", "bob") == b"from-tool"
    assert deviceid.delete_secret("py-interop", "bob")
    assert run(["secret-tool", "lookup", "service", "py-interop", "username", "bob"]).returncode != 0
    assert not list(store.glob("secret-*")), "keyring secrets never reach the file store"


def test_error_detail_comes_from_the_library(store, keyring):
    from conftest import KEYRING_CONTROL, run

    run([KEYRING_CONTROL, "lock"])
    with pytest.raises(deviceid.LockedError) as caught:
        deviceid.get("py.locked.app")
    assert caught.value.status == -4
    assert "locked" in str(caught.value)


def test_the_package_exports_exactly_its_api_and_is_typed():
    public = {name for name in dir(deviceid) if not name.startswith("_")}
    assert public == set(deviceid.__all__), "dir() shows the API and nothing else (no ctypes, namedtuple)"
    assert (pathlib.Path(deviceid.__file__).parent / "py.typed").exists(), "PEP 561: type checkers read it"


def test_python_m_deviceid_speaks_like_the_cli(cli, store):
    as_module = subprocess.run([sys.executable, "-m", "deviceid", "--json", "get", "com.example.module"],
                               capture_output=True, text=True)
    assert as_module.returncode == 0, as_module.stderr
    from_cli = json.loads(subprocess.run([cli, "--json", "get", "com.example.module"], capture_output=True,
                                         text=True).stdout)
    mine = json.loads(as_module.stdout)
    assert mine["id"] == from_cli["id"] and set(mine) == set(from_cli)
    usage = subprocess.run([sys.executable, "-m", "deviceid", "frobnicate"], capture_output=True, text=True)
    assert usage.returncode == 2 and "Try 'python -m deviceid --help'." in usage.stderr


def test_an_unloadable_library_says_what_to_install(tmp_path):
    env = dict(os.environ, DEVICEID_LIBRARY=str(tmp_path / "missing.so"), LD_LIBRARY_PATH=str(tmp_path))
    loader = pathlib.Path(deviceid.__file__).parent / "_loader.py"
    code = ("import ctypes.util, importlib.util as u; "
            f"spec = u.spec_from_file_location('loader', {str(loader)!r}); l = u.module_from_spec(spec); "
            "spec.loader.exec_module(l); ctypes.util.find_library = lambda name: None; "
            "l.SONAME = 'libdeviceid-not-installed.so.1'; l.load()")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert "ImportError" in result.stderr
    for advice in ("apt install libdeviceid1", "make install", "pip install", "DEVICEID_LIBRARY"):
        assert advice in result.stderr, advice
