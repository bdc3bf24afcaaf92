"""GLib, libsecret, libcrypto and libdbus are loaded on first use (Sources/CDeviceIDLibraries):
libdeviceid.so.2 and the deviceid command NEED libc and libm only; importing the Python binding or
getting an answer from the mirror maps none of them; the path that needs one loads it (an
identifier's keyring conversation GLib, a caller's secret libsecret too, a digest libcrypto); a
library that is missing or too old is UNAVAILABLE with words naming the package, and nothing is
minted.

What a process maps is read from /proc/self/maps (Python) or the dynamic loader's own account
(LD_DEBUG=files, which names every object loaded, dlopen'ed ones included)."""
import json
import os
import subprocess
import sys
import uuid

import pytest

from harness import run, tool

LOADED = ("libsecret-1.so", "libglib-2.0.so", "libgio-2.0.so", "libgobject-2.0.so", "libcrypto.so", "libdbus-1.so")
LIBDIR = "/usr/lib/" + subprocess.run(["gcc", "-print-multiarch"], capture_output=True, text=True).stdout.strip()


def needed(path):
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    return sorted(line.split("[")[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line)


@pytest.mark.parametrize("which", ["DEVICEID_LIBRARY", "DEVICEID_TEST_CLI"])
def test_needed_is_libc_and_libm_only(which):
    # ld.so is NEEDED for __tls_get_addr (thread-local storage in a shared object): it is the
    # dynamic loader itself, mapped in every dynamically linked process before anything else.
    names = [n for n in needed(tool(which)) if not n.startswith("ld-linux")]
    assert names == ["libc.so.6", "libm.so.6"], names


PROBE = r"""
import json, sys
import deviceid

def mapped():
    names = {line.split()[-1].rsplit("/", 1)[-1] for line in open("/proc/self/maps") if ".so" in line}
    return sorted(n.split(".so")[0] + ".so" for n in names if n.startswith(("libsecret", "libglib", "libgio", "libgobject", "libcrypto", "libdbus")))

steps = {"import": mapped()}
for step in sys.argv[1:]:
    kind, _, arg = step.partition(":")
    if kind == "get":
        deviceid.get(arg)
    elif kind == "md5":
        deviceid.hash_hex(b"abc", "md5")
    elif kind == "secret":
        deviceid.store_secret("example.test", arg, b"s3cret")
        assert deviceid.lookup_secret("example.test", arg) == b"s3cret"
        deviceid.delete_secret("example.test", arg)
    steps[step] = mapped()
print(json.dumps(steps))
"""


def probe(*steps, env=None):
    result = run([sys.executable, "-c", PROBE, *steps], env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_python_import_and_mirror_first_get_map_none(keyring, tmp_path):
    app = f"com.example.lazy-{uuid.uuid4().hex[:8]}"
    env = {"DEVICEID_STORE_DIR": str(tmp_path / "store"), "DEVICEID_BACKEND": None}
    first = probe(f"get:{app}", f"secret:{app}", env=env)
    assert first["import"] == []
    # No mirror record yet: the keyring was asked, through GLib's D-Bus (the positive control that
    # makes the next assertions able to fail); an identifier crosses in the "plain" transfer
    # session, so libsecret is not loaded until a caller's secret is stored.
    assert first[f"get:{app}"] == ["libgio-2.0.so", "libglib-2.0.so", "libgobject-2.0.so"], first
    assert "libsecret-1.so" in first[f"secret:{app}"] and "libcrypto.so" not in first[f"secret:{app}"], first
    # A new process, the mirror in sync: the answer is local and loads nothing.
    again = probe(f"get:{app}", f"md5:", env=env)
    assert again["import"] == [] and again[f"get:{app}"] == [], again
    # A digest loads libcrypto, and only it.
    assert again["md5:"] == ["libcrypto.so"], again


def loaded_by(args, env):
    """The shared objects the dynamic loader loaded for a command (LD_DEBUG=files)."""
    result = run(args, env={**env, "LD_DEBUG": "files"})
    names = set()
    for line in result.stderr.splitlines():
        if "file=" in line and ("[0];  needed by" in line or "dynamically loaded by" in line):
            names.add(line.split("file=")[1].split()[0].split(".so")[0] + ".so")
    return result, sorted(n for n in names if n.startswith(LOADED))


@pytest.mark.parametrize("program", ["DEVICEID_TEST_CLI", "DEVICEID_TEST_C_EXAMPLE"])
def test_c_program_and_cli_mirror_first_get_load_none(keyring, tmp_path, program):
    app = f"com.example.lazy-{uuid.uuid4().hex[:8]}"
    env = {"DEVICEID_STORE_DIR": str(tmp_path / "store"), "DEVICEID_BACKEND": None}
    command = [tool(program), "get", app] if program == "DEVICEID_TEST_CLI" else [tool(program), app]
    result, first = loaded_by(command, env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "libgio-2.0.so" in first and "libsecret-1.so" not in first and "libcrypto.so" not in first, first
    result, again = loaded_by(command, env)
    assert result.returncode == 0 and again == [], again


def in_namespace_without(hidden, command, env):
    """Runs `command` where each file of `hidden` is unreadable as a library (bind-mounted
    /dev/null over it): what a machine without that package looks like to dlopen."""
    mounts = " && ".join(f"mount --bind /dev/null {path}" for path in hidden)
    script = f'{mounts} && exec "$@"'
    return run(["unshare", "--mount", "sh", "-c", script, "sh", *command], env=env, input="")


def real(soname):
    path = os.path.realpath(os.path.join(LIBDIR, soname))
    assert os.path.exists(path), path
    return path


def test_without_libsecret_ids_and_secrets_still_reach_the_keyring(keyring, tmp_path, cli):
    app = f"com.example.nolibsecret-{uuid.uuid4().hex[:8]}"
    env = {"DEVICEID_STORE_DIR": str(tmp_path / "store"), "DEVICEID_BACKEND": None}
    minted = run([cli, "get", "--json", app], env=env)
    assert minted.returncode == 0, minted.stderr
    expected = json.loads(minted.stdout)["id"]
    # The mirror dropped: only the keyring holds the ID, and libsecret cannot be loaded.
    env_keyring_only = {**env, "DEVICEID_STORE_DIR": str(tmp_path / "other-store")}
    result = in_namespace_without([real("libsecret-1.so.0")], [cli, "get", "--json", app], env_keyring_only)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["id"] == expected and answer["source"] == "keyring", answer
    # A caller's secret, which libsecret would encrypt in transfer, crosses in "plain" instead (as
    # in a forked child), rather than failing: stored and read back.
    store = in_namespace_without([real("libsecret-1.so.0")], ["sh", "-c", f"printf pw | {cli} secret store t {app} && "
                                                              f"{cli} secret lookup t {app} && {cli} secret delete t {app}"],
                                 env_keyring_only)
    assert store.returncode == 0 and store.stdout == "pw", (store.stdout, store.stderr)


def test_without_glib_the_keyring_is_reached_through_libdbus(keyring, tmp_path, cli):
    app = f"com.example.noglib-{uuid.uuid4().hex[:8]}"
    env = {"DEVICEID_STORE_DIR": str(tmp_path / "store"), "DEVICEID_BACKEND": None}
    minted = run([cli, "get", "--json", app], env=env)
    assert minted.returncode == 0, minted.stderr
    result = in_namespace_without([real("libgio-2.0.so.0")], [cli, "get", "--json", app],
                                  {**env, "DEVICEID_STORE_DIR": str(tmp_path / "other-store")})
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["id"] == json.loads(minted.stdout)["id"] and answer["source"] == "keyring", answer


def test_without_any_keyring_client_it_is_unavailable_and_nothing_is_minted(keyring, tmp_path, cli):
    app = f"com.example.noclient-{uuid.uuid4().hex[:8]}"
    store = tmp_path / "store"
    env = {"DEVICEID_STORE_DIR": str(store), "DEVICEID_BACKEND": None}
    result = in_namespace_without([real("libgio-2.0.so.0"), real("libdbus-1.so.3")], [cli, "get", "--json", app], env)
    assert result.returncode == 15, (result.returncode, result.stdout, result.stderr)  # 10 + |UNAVAILABLE|
    error = json.loads(result.stdout or result.stderr)["error"]
    assert error["name"] == "UNAVAILABLE", error
    for words in ("libgio-2.0.so.0", "libglib2.0-0", "libdbus-1.so.3", "libdbus-1-3"):
        assert words in error["message"], error
    # The keyring may hold the ID: "cannot load its client" is not "none", so nothing was minted.
    assert not [p for p in store.rglob("*") if p.is_file()], list(store.rglob("*"))
    after = run([cli, "get", "--json", app], env=env)
    assert after.returncode == 0 and json.loads(after.stdout)["source"] == "created", after.stdout
    assert [p for p in store.rglob("*") if p.is_file()], "the control: a get that mints leaves a mirror record"


def test_without_libcrypto_a_digest_is_unavailable_naming_the_package(tmp_path, cli):
    result = in_namespace_without([real("libcrypto.so.3")], [cli, "--json", "hash", "md5"], {})
    assert result.returncode == 15, (result.stdout, result.stderr)
    error = json.loads(result.stdout or result.stderr)["error"]
    assert "libcrypto.so.3" in error["message"] and "libssl3" in error["message"], error
    # An answer that needs no digest is unaffected.
    answer = in_namespace_without([real("libcrypto.so.3")], [cli, "uuid"], {})
    assert answer.returncode == 0 and len(answer.stdout.strip()) == 36, answer


def test_a_library_too_old_names_the_missing_function(tmp_path, cli):
    # A libgio-2.0.so.0 that has none of the functions DeviceID calls: what dlopen finds first on
    # LD_LIBRARY_PATH. The transport falls back to libdbus; without it too, the error names both.
    stub = tmp_path / "libgio-2.0.so.0"
    subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libgio-2.0.so.0", "-o", str(stub), "-x", "c", "/dev/null"],
                   check=True)
    env = {"LD_LIBRARY_PATH": str(tmp_path), "DEVICEID_STORE_DIR": str(tmp_path / "store"), "DEVICEID_BACKEND": None}
    result = in_namespace_without([real("libdbus-1.so.3")], [cli, "get", "--json", "com.example.old"], env)
    assert result.returncode == 15, (result.stdout, result.stderr)
    message = json.loads(result.stdout or result.stderr)["error"]["message"]
    assert "libgio-2.0.so.0 has no g_clear_error" in message and "too old" in message, message
