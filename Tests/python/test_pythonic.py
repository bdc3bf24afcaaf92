"""The Python package as a Python developer judges it: `python -m deviceid` is the deviceid command
(one contract: same output, errors and exit status for every command), a Client with its own
configuration, exceptions named as they are imported, help() on everything, a version that
importlib.metadata knows. mypy --strict on the package and the examples runs in scripts/test."""
import importlib.metadata
import inspect
import json
import os
import pickle
import re
import subprocess
import sys
import traceback

import pytest

import deviceid
from conftest import UUID_V4, run

PYTHON_M = [sys.executable, "-m", "deviceid"]

# Every command of `deviceid --help`, its help, and the usage errors around them.
ARGUMENTS = [
    ["get", "py.app"], ["get", "py.app"], ["--json", "get", "py.app"], ["reset", "py.app"],
    ["vendor", "get", "py.vendor"], ["vendor", "reset", "py.vendor"], ["advertising"], ["advertising", "limit"],
    ["openudid", "get", "py.app"], ["uuid", "--compact"], ["machine-id", "app-specific", "py.app"],
    ["mac", "--interface", "lo"], ["secret", "lookup", "py.service", "nobody"], ["doctor", "--json"],
    ["version"], ["--version"], ["--help"], ["-h"], ["help"], ["help", "get"], ["help", "secret"],
    ["get", "--help"], ["secret", "--help"], ["get"], ["get", "a", "b"], ["frobnicate"], ["--frobnicate"],
    ["--json", "get"], ["--backend", "cloud", "get", "x"], ["get", "-"], ["get", ""],
]


def file_env(tmp_path):
    return {"DEVICEID_BACKEND": "file", "DEVICEID_STORE_DIR": str(tmp_path / "store")}


@pytest.mark.parametrize("args", ARGUMENTS, ids=" ".join)
def test_python_m_deviceid_is_the_command(cli, tmp_path, args):
    env = dict(file_env(tmp_path), DEVICEID_CLI=cli)
    run([cli, *args], env=env)  # the first run may mint; both compared runs then read the same state
    theirs = run([cli, *args], env=env)
    mine = run(PYTHON_M + args, env=env)
    if args[0] == "uuid":  # a fresh random UUID each time: the same form
        theirs.stdout, mine.stdout = (re.sub("[0-9a-f]{32}", "X", r.stdout) for r in (theirs, mine))
    assert (mine.returncode, mine.stdout, mine.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr)


def test_an_option_is_never_an_app_id(cli, tmp_path):
    env = dict(file_env(tmp_path), DEVICEID_CLI=cli)
    for args in (["get", "--help"], ["get", "-h"], ["reset", "--help"], ["vendor", "get", "--help"]):
        result = run(PYTHON_M + args, env=env)
        assert result.returncode == 0 and result.stdout.startswith("usage:"), (args, result)
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").iterdir()), "nothing was stored"


def test_python_m_deviceid_finds_the_command_on_path_and_says_when_there_is_none(cli, tmp_path):
    bin_dir = os.path.dirname(cli)
    found = run(PYTHON_M + ["version"], env={"DEVICEID_CLI": None, "PATH": f"{bin_dir}:/usr/bin:/bin"})
    assert found.returncode == 0 and found.stdout == run([cli, "version"]).stdout
    missing = run(PYTHON_M + ["version"], env={"DEVICEID_CLI": None, "PATH": str(tmp_path)})
    assert missing.returncode == 15 and "the deviceid command is not installed" in missing.stderr
    from deviceid import __main__ as module
    assert module.main(["version"]) == 0, "main() called from Python returns the exit status"


def test_a_client_has_a_configuration_of_its_own(cli, tmp_path, store):
    one = deviceid.Client(backend="file", store_dir=str(tmp_path / "one"), timeout=2.5)
    two = deviceid.Client(backend="file", store_dir=str(tmp_path / "two"))
    first = one.get("py.client")
    assert UUID_V4.match(first) and one.get("py.client") == first
    assert two.get("py.client") != first, "another store, another ID"
    assert one.backend == "file" and deviceid.get_backend() == "auto", "the process-wide configuration is untouched"
    theirs = json.loads(run([cli, "--json", "get", "py.client"], env={
        "DEVICEID_BACKEND": "file", "DEVICEID_STORE_DIR": str(tmp_path / "one")}).stdout)
    info = one.get_info("py.client")
    assert (info.id, info.location) == (theirs["id"], theirs["location"]) and theirs["id"] == first
    assert info.source == "created", "an answer from memory says where it first came from"
    one.store_secret("py.service", "acct", b"s3cret")
    assert one.lookup_secret("py.service", "acct") == b"s3cret" and two.lookup_secret("py.service", "acct") is None
    assert one.delete_secret("py.service", "acct") is True and one.delete_secret("py.service", "acct") is False
    one.reset("py.client")
    assert one.get("py.client") != first
    with deviceid.Client(backend="file", store_dir=str(tmp_path / "one")) as three:
        assert three.vendor_id("py.vendor") == one.vendor_id("py.vendor")
    with pytest.raises(ValueError, match="closed"):
        three.get("py.client")
    with pytest.raises(deviceid.InvalidArgumentError):
        deviceid.Client(backend="fil")  # type: ignore[arg-type]
    with pytest.raises(deviceid.InvalidArgumentError):
        deviceid.Client(timeout=0)
    with pytest.raises(deviceid.InvalidArgumentError):
        deviceid.Client(store_dir="relative")
    assert deviceid.Client(interactive=True, interactive_timeout=30).interactive is True
    one.close()
    two.close()


def test_a_client_is_not_copied_and_closes_after_running_calls(tmp_path):
    import copy
    import threading

    client = deviceid.Client(backend="file", store_dir=str(tmp_path / "store"))
    for attempt in (lambda: pickle.dumps(client), lambda: copy.copy(client), lambda: copy.deepcopy(client)):
        with pytest.raises(TypeError, match="cannot be"):
            attempt()
    errors = []

    def hammer():
        try:
            for _ in range(200):
                client.get("py.threads")
        except ValueError:
            pass  # closed under us: refused, never a freed context
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for thread in threads:
        thread.start()
    client.close()
    client.close()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert repr(client) == "<deviceid.Client (closed)>"
    with pytest.raises(ValueError, match="closed"):
        client.get("py.threads")


def test_a_reset_through_a_client_is_seen_by_the_process_wide_calls(store):
    """One ID per app in a process: a context and the process-wide configuration with the same
    store share it, and a reset through either makes the other's remembered answer stale."""
    deviceid.set_backend("file")
    client = deviceid.Client(backend="file", store_dir=str(store))
    first = deviceid.get("py.shared")
    assert client.get("py.shared") == first
    client.reset("py.shared")
    second = deviceid.get("py.shared")
    assert second != first, "the process-wide cache did not keep the reset ID"
    assert client.get("py.shared") == second
    deviceid.reset("py.shared")
    third = client.get("py.shared")
    assert third not in (first, second) and deviceid.get("py.shared") == third
    client.close()
    deviceid.set_backend("auto")


def test_timeouts_are_seconds(store):
    deviceid.set_timeout(0.25)
    deviceid.set_timeout(86_400)
    for bad in (0, -1, 86_400.001, True, "5"):
        with pytest.raises(deviceid.InvalidArgumentError):
            deviceid.set_timeout(bad)
    deviceid.set_timeout(5)


def test_exceptions_are_named_as_imported():
    error = deviceid.LockedError("the keyring is locked")
    assert type(error).__module__ == "deviceid" and type(error).__qualname__ == "LockedError"
    shown = "".join(traceback.format_exception_only(type(error), error))
    assert shown.startswith("deviceid.LockedError: the keyring is locked"), shown
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is deviceid.LockedError and str(copy) == str(error), "multiprocessing can return it"


def test_everything_public_has_help():
    missing = []
    for name in deviceid.__all__:
        value = getattr(deviceid, name)
        if (inspect.isfunction(value) or inspect.isclass(value)) and not inspect.getdoc(value):
            missing.append(name)
    for name, member in inspect.getmembers(deviceid.Client):
        if not name.startswith("_") and not inspect.getdoc(member):
            missing.append(f"Client.{name}")
    assert not missing, f"no docstring: {missing}"
    internals = [name for name in deviceid.__all__ if name.startswith(("FLAG_", "FORMAT_")) or name == "UUID_STRING_MAX"]
    assert not internals, f"C details in the API: {internals}"


def test_the_installed_package_has_metadata():
    """Under a name of its own on the index ("deviceid" on PyPI is another project), with no URL
    that is not this project's, and one console script: the deviceid command."""
    assert importlib.metadata.version("deviceid-linux") == deviceid.__version__
    meta = importlib.metadata.metadata("deviceid-linux")
    assert meta["Name"] == "deviceid-linux" and "keyring" in meta["Summary"]
    assert meta.get_all("Project-URL") is None and meta.get("Home-page") is None
    ours = [(ep.name, ep.value) for ep in importlib.metadata.entry_points().select(group="console_scripts")
            if ep.value.startswith("deviceid")]
    assert ours == [("deviceid", "deviceid.__main__:script")], ours
