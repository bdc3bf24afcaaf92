"""Shared fixtures. scripts/test runs this suite inside scripts/with-keyring with the library,
CLI and examples installed in a private prefix, and exports where they are."""
import os
import shutil
import subprocess
import tempfile

import pytest

from harness import ROOT, UUID_V4, UUID_V4_TEXT, run, tool  # noqa: F401  (re-exported to the tests)

WITH_KEYRING = str(ROOT / "scripts" / "with-keyring")

# `python -m deviceid` runs the deviceid command: the one under test, not one on PATH (README
# command 1 installs another copy in /usr/local/bin).
if os.environ.get("DEVICEID_TEST_CLI"):
    os.environ["DEVICEID_CLI"] = os.environ["DEVICEID_TEST_CLI"]
KEYRING_CONTROL = str(ROOT / "scripts" / "keyring-control")

# Markers, for a quick local loop (`-m "not slow"`, `-m "not root"`): `slow` is set by hand on the
# cases that take seconds (measured with --durations); `keyring` and `root` are derived from what a
# case uses, so that they cannot drift from it.
MARKERS = {
    "keyring": "needs the private keyring of scripts/with-keyring (scripts/test python runs the suite in it)",
    "root": "needs root: network namespaces, mounts, another user, files owned by others",
    "slow": "takes seconds: soaks, sandboxes, forks of many processes",
}
# Module fixtures that take seconds to set up (a Flatpak-style sandbox with its portal).
SLOW_FIXTURES = {"portal_runs"}
# What makes a case need root, as it appears in the case's source.
ROOT_ONLY = ("as_nobody(", "unshare", "netns", "setpriv", "os.chown", "mount ", "/var/lib", "in_flatpak(",
             "in_container(", "portal_runs")


def pytest_configure(config):
    for name, meaning in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {meaning}")


def pytest_collection_modifyitems(config, items):
    import inspect

    for item in items:
        function = getattr(item, "function", None)
        source = inspect.getsource(function) if function else ""
        if "keyring" in item.fixturenames or "keyring-control" in source or "KEYRING_CONTROL" in source:
            item.add_marker("keyring")
        if SLOW_FIXTURES & set(item.fixturenames):
            item.add_marker("slow")
        if any(word in source for word in ROOT_ONLY):
            item.add_marker("root")


@pytest.fixture(scope="session")
def cli():
    return tool("DEVICEID_TEST_CLI")


@pytest.fixture(scope="session")
def c_example():
    return tool("DEVICEID_TEST_C_EXAMPLE")


@pytest.fixture(scope="session")
def swift_example():
    return tool("DEVICEID_TEST_SWIFT_EXAMPLE")


@pytest.fixture
def keyring():
    """The private keyring of the test run. Its absence fails the test; it never skips."""
    assert os.environ.get("DEVICEID_TEST_KEYRING") == "1", \
        "this test needs the private keyring: run it through scripts/test"
    yield
    subprocess.run([KEYRING_CONTROL, "unlock"], check=True, capture_output=True)


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A fresh file store for this test, for child processes and for the loaded library."""
    import deviceid

    directory = tmp_path / "store"
    monkeypatch.setenv("DEVICEID_STORE_DIR", str(directory))
    monkeypatch.delenv("DEVICEID_BACKEND", raising=False)
    deviceid.set_store_dir(str(directory))
    deviceid.set_backend("auto")
    yield directory
    deviceid.set_store_dir(None)
    deviceid.set_backend("auto")


# Helpers every scenario script may use.
SCENARIO_PRELUDE = """set -u
keyring_pid() {
    gdbus call --session --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus \\
        --method org.freedesktop.DBus.GetConnectionUnixProcessID org.freedesktop.secrets | awk '{print $2}' | tr -d ',)'
}
"""


def in_fresh_keyring(script, *, env=None, no_unlock=False, timeout=120):
    """Runs a bash script inside a new private D-Bus session and keyring of its own."""
    args = [WITH_KEYRING] + (["--no-unlock"] if no_unlock else []) + ["bash", "-c", SCENARIO_PRELUDE + script]
    return run(args, env=env, timeout=timeout)


# What runs under valgrind runs some 50 times slower: a first keyring get needed a deadline of about
# 1 s there on an idle two-core machine (600 ms: TIMED_OUT), and at load 7 the default 5 s was
# not enough (issue 50). Valgrind runs get this deadline, far above that need and below the
# tests' own timeouts, so that a keyring that does not answer still ends as TIMED_OUT.
UNDER_VALGRIND = {"DEVICEID_TIMEOUT_MS": "60000"}

NOBODY = 65534


@pytest.fixture
def shared_tmp():
    """A directory every user can traverse (pytest's own are root-only)."""
    path = tempfile.mkdtemp(prefix="deviceid-users-")
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def as_nobody(args, env=None):
    """Runs a command as the unprivileged user nobody, with no supplementary groups."""
    return run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *args], env=env)
