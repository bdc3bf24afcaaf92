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


# The defines of the header that are not numbers: the include guard, the nullability
# annotations and the version string (compared below). Any other define must read as an integer.
NOT_NUMBERS = {"H", "NONNULL", "NULLABLE", "VERSION_STRING"}


def header_defines(unread=None, source=None):
    """Every `#define DEVICEID_NAME value` of include/deviceid.h whose value is an integer in any
    form C writes one: decimal or hex, any u/U/l/L suffix (`64u`, `37U`), in parentheses, negative
    (`(-1)`), followed by a comment or not. A define whose value cannot be read that way goes into
    `unread` (name: text) instead of being skipped or misread: `(1u << 6)` is not 1, `0x40u` not 0."""
    found = {}
    for name, text in re.findall(r"^[ \t]*#[ \t]*define[ \t]+DEVICEID_(\w+)(.*)$", source or HEADER, re.M):
        text = re.sub(r"/\*.*?(\*/|$)|//.*", "", text).strip()
        number = re.fullmatch(r"\(?\s*(-?)\s*(0[xX][0-9a-fA-F]+|[0-9]+)[uUlL]*\s*\)?", text)
        if number and text.count("(") == text.count(")"):
            sign, digits = number.groups()
            found[name] = (-1 if sign else 1) * int(digits, 16 if digits[:2] in ("0x", "0X") else 10)
        elif unread is not None:
            unread[name] = text
    return found


def test_the_header_parse_reads_every_form_c_writes_a_constant_in():
    text = ("#define DEVICEID_FLAG_A 64u  /* a comment */\n#define DEVICEID_E_B (-12) // c\n"
            "#define DEVICEID_C 0x40U\n#  define DEVICEID_D 37UL /* a comment that goes on\n"
            "#define DEVICEID_FLAG_E (1u << 6)\n#define DEVICEID_FLAG_F 0x10u|0x20u\n#define DEVICEID_G\n")
    unread = {}
    assert header_defines(unread, text) == {"FLAG_A": 64, "E_B": -12, "C": 64, "D": 37}
    assert unread == {"FLAG_E": "(1u << 6)", "FLAG_F": "0x10u|0x20u", "G": ""}


def test_constants_match_the_header():
    """Every numeric #define of the header is compared with what the binding uses for it, both
    ways: a constant the header gains and Python lacks fails here, as does one Python keeps and
    the header no longer has. Python's own tables (FLAG_*, BACKENDS, SCOPES, FORMAT_*, the MAC
    bits, the hash algorithms, the exceptions) must equal the header's; the rest Python asks the
    library for (sizes, version, status and source names), and those answers are compared."""
    unread = {}
    defines = header_defines(unread)
    assert set(unread) == NOT_NUMBERS, f"defines whose value this test cannot read: {unread}"

    def family(prefix):
        return {name[len(prefix):]: value for name, value in defines.items() if name.startswith(prefix)}

    def exported(prefix):
        return {name[len(prefix):]: value for name, value in vars(deviceid._c).items() if name.startswith(prefix)}

    checked = set()

    def check(prefix, python, header=None):
        header = family(prefix) if header is None else header
        assert header, f"no DEVICEID_{prefix}* read from the header"
        assert python == header, f"DEVICEID_{prefix}*: Python has {python}, the header {header}"
        checked.update(prefix + name for name in header)

    version = re.search(r'#define DEVICEID_VERSION_STRING "([^"]+)"', HEADER).group(1)
    assert deviceid.__version__ == version
    check("VERSION_", {part: getattr(deviceid._native, "version_" + part.lower())()
                       for part in ("MAJOR", "MINOR", "PATCH")})
    assert "%d.%d.%d" % tuple(defines["VERSION_" + p] for p in ("MAJOR", "MINOR", "PATCH")) == version
    sizes = {name: value for name, value in defines.items() if name.endswith("_MAX")}
    check("", {name: getattr(deviceid._native, name.lower(), lambda: None)() for name in sizes}, sizes)
    assert (deviceid._core.UUID_STRING_MAX, deviceid.NAME_MAX, deviceid.SECRET_MAX) == \
        (sizes["UUID_STRING_MAX"], sizes["NAME_MAX"], sizes["SECRET_MAX"])
    check("OK", {"": 0})  # the success the binding tests for (status < 0 fails)

    flags = family("FLAG_")
    assert "MIRRORED" in flags and "PROVISIONAL" in flags
    check("FLAG_", exported("FLAG_"))
    for name in flags:  # and StableID reports each of them
        assert name.lower() in deviceid.StableID._fields, name
    check("FORMAT_", exported("FORMAT_"))
    check("BACKEND_", {name.upper().replace("-", "_"): number for name, number in deviceid._c.BACKEND_NUMBERS.items()})
    assert deviceid.BACKENDS == tuple(deviceid._c.BACKEND_NUMBERS)
    check("SCOPE_", {name.upper(): number for name, number in deviceid._c.SCOPE_NUMBERS.items()})
    assert deviceid.SCOPES == tuple(deviceid._c.SCOPE_NUMBERS)
    check("MAC_", exported("MAC_"), {k: v for k, v in family("MAC_").items() if not k.endswith("_MAX")})
    check("HASH_", {name.upper(): number for name, number in deviceid._c.ALGORITHM_NUMBERS.items()})
    # Sources: Python names them with the library's deviceid_source_name(), as the CLI does.
    check("SOURCE_", {name: value for name, value in family("SOURCE_").items()
                      if deviceid._native.source_name(value).decode() == name.lower()})
    # Environments, locations and portal states: named by the library (deviceid_*_name()), as
    # deviceid.environment() and StableID.location report them; survival bits are Python's own.
    for prefix, name_of in (("ENVIRONMENT_", deviceid._native.environment_kind_name),
                            ("LOCATION_", deviceid._native.location_name),
                            ("PORTAL_", deviceid._native.portal_state_name)):
        check(prefix, {name: value for name, value in family(prefix).items()
                       if name_of(value).decode().replace("-", "_").upper() == name})
    check("SURVIVES_", exported("SURVIVES_"))
    statuses = family("E_")
    check("E_", {error.name: error.status for error in deviceid._errors.BY_STATUS.values()})
    for name, value in statuses.items():
        assert deviceid.status_name(value) == name
        assert getattr(deviceid, deviceid._errors.BY_STATUS[value].__name__) is deviceid._errors.BY_STATUS[value]

    assert set(defines) == checked, f"constants of the header no test compares with Python: {set(defines) - checked}"


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


def test_get_answers_each_app_id_for_itself_past_its_encoding_cache(store):
    """get() keeps the app ids it has checked encoded (at most 64, exact str only): many ids,
    asked twice, and str subclasses whose equality lies, each get their own app's ID."""
    deviceid.set_backend("file")
    ids = [f"com.example.many{i}" for i in range(150)]
    expected = {app: deviceid.get_info(app).id for app in ids}   # not through get()'s cache
    assert len(set(expected.values())) == len(ids)
    for _ in range(2):
        assert [deviceid.get(app) for app in ids] == [expected[app] for app in ids]

    class Liar(str):
        def __eq__(self, other: object) -> bool:
            return True

        def __hash__(self) -> int:
            return hash("com.example.many0")

    assert deviceid.get("com.example.many0") == expected["com.example.many0"]
    assert deviceid.get(Liar("com.example.many1")) == expected["com.example.many1"]
    assert deviceid.get("com.example.many0") == expected["com.example.many0"]
    assert deviceid.get(Liar("com.example.many2")) == expected["com.example.many2"]
    with pytest.raises(deviceid.InvalidArgumentError):
        deviceid.get(Liar("bad\0id"))


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
        deviceid.set_interactive(True, timeout=86_400.001)
    with pytest.raises(TypeError):
        deviceid.set_interactive(True, 30_000)  # type: ignore[misc]  # 0.2's milliseconds, refused
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
    assert usage.returncode == 2 and "Try 'deviceid --help'." in usage.stderr


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
