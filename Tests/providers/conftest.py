"""The provider suite: the same cases against every Secret Service DeviceID names, each a real
daemon in a private D-Bus session that scripts/test-providers starts (DEVICEID_TEST_PROVIDER says
which: gnome-keyring, keepassxc, kwallet). Cases marked `no_collection` run where the provider
was started with no default collection; the others where it has an unlocked one."""
import os
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))
from harness import ROOT, UUID_V4, envelope, run, secret_service_owner, tool  # noqa: E402,F401  (shared with Tests/python)

KEYRING_CONTROL = str(ROOT / "scripts" / "keyring-control")
NAMES = {"gnome-keyring": "GNOME Keyring", "keepassxc": "KeePassXC", "kwallet": "KWallet"}
# The owner of org.freedesktop.secrets each lane must see (/proc/PID/comm, 15 characters at most),
# and the variable its wrapper exports the daemon's PID in, if any.
OWNERS = {"gnome-keyring": ({"gnome-keyring-d"}, None), "keepassxc": ({"keepassxc"}, "KPX_PID"),
          "kwallet": ({"kwalletd5", "kwalletd6"}, "KW_PID")}


def pytest_configure(config):
    config.addinivalue_line("markers", "no_collection: needs a provider started with no default collection")
    config.addinivalue_line("markers", "rapid_writes: writes in a row, also run against a large KeePassXC database")


@pytest.fixture(scope="session")
def provider():
    """The provider under test. Its absence fails the test; it never skips."""
    name = os.environ.get("DEVICEID_TEST_PROVIDER")
    assert name in NAMES, "run this suite through scripts/test-providers"
    return name


@pytest.fixture(scope="session", autouse=True)
def secret_service(provider):
    """Who owns org.freedesktop.secrets, checked before any case of every lane: the provider the
    lane started, not a daemon something else had the bus activate (the test buses activate
    nothing: scripts/session-no-activation.conf)."""
    pid, comm = secret_service_owner()
    commands, pid_variable = OWNERS[provider]
    assert comm in commands, f"org.freedesktop.secrets belongs to {comm!r} (PID {pid}), not to {provider}"
    if pid_variable and os.environ.get(pid_variable):
        assert pid == int(os.environ[pid_variable]), f"org.freedesktop.secrets belongs to PID {pid}, not ${pid_variable}"
    return pid, comm


@pytest.fixture(scope="session")
def cli():
    return tool("DEVICEID_TEST_CLI")


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A fresh file store for the processes a test starts."""
    directory = tmp_path / "store"
    monkeypatch.setenv("DEVICEID_STORE_DIR", str(directory))
    monkeypatch.delenv("DEVICEID_BACKEND", raising=False)
    return directory
