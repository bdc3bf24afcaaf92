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

ROOT = pathlib.Path(__file__).resolve().parents[2]
HEADER = (ROOT / "include" / "deviceid.h").read_text()
TECHNIQUES = (ROOT / "include" / "deviceid-techniques.h").read_text()


# The defines of the header that are not numbers: the include guard, the nullability
# annotations and the version string (compared below). Any other define must read as an integer.
NOT_NUMBERS = {"H", "TECHNIQUES_H", "NONNULL", "NULLABLE", "VERSION_STRING"}


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


def test_the_generated_tables_are_current():
    """_c.py, the header's status block, DeviceIDError+Codes.swift and Version.swift are what
    scripts/gen-abi writes from their owners today: none was edited by hand or left stale."""
    result = subprocess.run([str(ROOT / "scripts" / "gen-abi"), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_every_number_of_the_headers_reaches_the_binding():
    """Every numeric #define of both headers is in _c (read with a parser of its own, not
    gen-abi's), and Python's own tables (BACKENDS, SCOPES, the flags StableID reports, the names the
    library gives environments, locations and portal states, the exceptions) agree with them."""
    unread = {}
    defines = {**header_defines(unread), **header_defines(unread, TECHNIQUES)}
    assert set(unread) == NOT_NUMBERS, f"defines whose value this test cannot read: {unread}"
    numbers = {name: value for name, value in vars(deviceid._c).items() if name.isupper() and isinstance(value, int)}
    assert numbers == {name: value for name, value in defines.items() if not name.startswith("E_")}

    def family(prefix):
        return {name[len(prefix):]: value for name, value in defines.items() if name.startswith(prefix)}

    version = re.search(r'#define DEVICEID_VERSION_STRING "([^"]+)"', HEADER).group(1)
    assert deviceid.__version__ == version == "%d.%d.%d" % tuple(defines["VERSION_" + p] for p in ("MAJOR", "MINOR", "PATCH"))
    assert (deviceid._core.UUID_STRING_MAX, deviceid.NAME_MAX, deviceid.SECRET_MAX) == \
        (defines["UUID_STRING_MAX"], defines["NAME_MAX"], defines["SECRET_MAX"])
    for name in family("FLAG_"):  # StableID reports each flag
        assert name.lower() in deviceid.StableID._fields, name
    assert {name.upper().replace("-", "_"): n for name, n in deviceid._core.BACKEND_NUMBERS.items()} == family("BACKEND_")
    assert deviceid.BACKENDS == tuple(sorted(deviceid._core.BACKEND_NUMBERS, key=deviceid._core.BACKEND_NUMBERS.get))
    assert {name.upper(): number for name, number in deviceid._core.SCOPE_NUMBERS.items()} == family("SCOPE_")
    assert deviceid.SCOPES == tuple(deviceid._core.SCOPE_NUMBERS)
    # Sources, environments, locations and portal states: Python reports the library's names
    # (deviceid_*_name()), which must be the macros' own words.
    for prefix, name_of in (("SOURCE_", deviceid._native.source_name),
                            ("ENVIRONMENT_", deviceid._native.environment_kind_name),
                            ("LOCATION_", deviceid._native.location_name),
                            ("PORTAL_", deviceid._native.portal_state_name)):
        for name, value in family(prefix).items():
            assert name_of(value).decode().replace("-", "_").upper() == name, (prefix, name)
    statuses = family("E_")
    assert {error.name: error.status for error in deviceid._errors.BY_STATUS.values()} == statuses
    for name, value in statuses.items():
        assert deviceid.status_name(value) == name
        assert getattr(deviceid, deviceid._errors.BY_STATUS[value].__name__) is deviceid._errors.BY_STATUS[value]


def test_the_environment_struct_has_the_c_layout(tmp_path):
    """ctypes' deviceid_environment has every field at the offset, and the size, a C compiler gives
    the header's struct: a field the header gains, moves or resizes fails here."""
    import ctypes
    fields = [name for name, _, _ in deviceid._c.ENVIRONMENT_FIELDS]
    source = tmp_path / "layout.c"
    source.write_text("#include <stddef.h>\n#include <stdio.h>\n#include <deviceid.h>\nint main(void) {\n"
                      '    printf("size %zu\\n", sizeof(deviceid_environment));\n'
                      + "".join(f'    printf("{f} %zu %zu\\n", offsetof(deviceid_environment, {f}), '
                                f"sizeof(((deviceid_environment *)0)->{f}));\n" for f in fields)
                      + "    return 0;\n}\n")
    binary = tmp_path / "layout"
    subprocess.run(["cc", "-Wall", "-Werror", f"-I{ROOT / 'include'}", "-o", str(binary), str(source)], check=True)
    c_layout = dict(line.split(" ", 1) for line in subprocess.run([str(binary)], capture_output=True, text=True,
                                                                   check=True).stdout.splitlines())
    structure = deviceid._native.Environment
    assert int(c_layout.pop("size")) == ctypes.sizeof(structure)
    assert c_layout == {f: f"{getattr(structure, f).offset} {getattr(structure, f).size}" for f in fields}


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
    import types
    # The package's own public submodules (deviceid.aio) appear once imported, as submodules do.
    public = {name for name in dir(deviceid) if not name.startswith("_")
              and not (isinstance(getattr(deviceid, name), types.ModuleType)
                       and getattr(deviceid, name).__name__ == f"deviceid.{name}")}
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
    for advice in ("apt install libdeviceid2", "make install", "pip install", "DEVICEID_LIBRARY"):
        assert advice in result.stderr, advice


@pytest.mark.parametrize("body", ["int deviceid_get_backend(void) { return 0; }",
                                  'const char *deviceid_version(void) { return "0.3.0"; }'])
def test_a_library_of_another_abi_is_passed_over_with_the_reason(tmp_path, body):
    # 0.3's libdeviceid.so.1 (no deviceid_version(), or not 1.x) takes other arguments: calling
    # it with 1.0's would crash, so the loader goes on to the next place, and says why.
    old = tmp_path / "libdeviceid.so.1"
    source = tmp_path / "old.c"
    source.write_text(body + "\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(old), str(source)], check=True)
    loader = pathlib.Path(deviceid.__file__).parent / "_loader.py"

    def load(soname):
        code = ("import ctypes.util, importlib.util as u; "
                f"spec = u.spec_from_file_location('loader', {str(loader)!r}); l = u.module_from_spec(spec); "
                "spec.loader.exec_module(l); ctypes.util.find_library = lambda name: None; "
                f"l.SONAME = {soname!r}; print(l.load()._name)")
        return subprocess.run([sys.executable, "-c", code], env=dict(os.environ, DEVICEID_LIBRARY=str(old)),
                              capture_output=True, text=True)

    refused = load("libdeviceid-not-installed.so.2")
    assert "ImportError" in refused.stderr and repr(str(old)) in refused.stderr
    assert "not libdeviceid 1.x" in refused.stderr or "libdeviceid 0.3.0, not 1.x" in refused.stderr
    found = load(os.environ["DEVICEID_LIBRARY"])
    assert found.returncode == 0 and found.stdout.strip() == os.environ["DEVICEID_LIBRARY"], found.stderr


def test_a_client_has_everything_a_context_has(tmp_path, store):
    """Settings, the environment and every scope through a Client: its own stores, the
    process-wide configuration untouched, and configure() changing only what it is given."""
    deviceid.set_backend("file")
    with deviceid.Client(backend="file", store_dir=str(tmp_path / "mine"), timeout=1.5) as client:
        assert (client.backend, client.timeout, client.interactive) == ("file", 1.5, False)
        client.configure(timeout=0.25)
        assert (client.backend, client.timeout) == ("file", 0.25)
        with pytest.raises(deviceid.InvalidArgumentError):
            client.configure(backend="nowhere")
        assert client.environment().store_path == str(tmp_path / "mine")
        assert deviceid.environment().store_path != str(tmp_path / "mine")
        client.set_advertising_limited(True)
        assert client.advertising_limited() and client.advertising_id() == deviceid.NULL_UUID
        assert not deviceid.advertising_limited() and deviceid.advertising_id() != deviceid.NULL_UUID
        client.set_advertising_limited(False)
        before = client.advertising_id()
        client.reset_advertising_id()
        assert UUID_V4.match(client.advertising_id()) and client.advertising_id() != before
        client.set_openudid_opt_out("com.example.mine", True)
        assert client.openudid_opted_out("com.example.mine") and not deviceid.openudid_opted_out("com.example.mine")
        with pytest.raises(deviceid.OptedOutError):
            client.openudid("com.example.mine")
        shared = client.openudid("com.example.other")
        client.reset_openudid()
        assert client.openudid("com.example.other") != shared
        vendor = client.vendor_id("com.vendor")
        assert vendor != deviceid.vendor_id("com.vendor")
        client.reset_vendor_id("com.vendor")
        assert client.vendor_id("com.vendor") != vendor
    with pytest.raises(ValueError, match="closed"):
        client.advertising_limited()
