"""The provider suite: the same cases against every Secret Service DeviceID names, each a real
daemon in a private D-Bus session that scripts/test-providers starts (DEVICEID_TEST_PROVIDER says
which: gnome-keyring, keepassxc, kwallet). Cases marked `no_collection` run where the provider
was started with no default collection; the others where it has an unlocked one."""
import os
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))
from harness import ROOT, UUID_V4, envelope, run, tool  # noqa: E402,F401  (shared with Tests/python)

KEYRING_CONTROL = str(ROOT / "scripts" / "keyring-control")
NAMES = {"gnome-keyring": "GNOME Keyring", "keepassxc": "KeePassXC", "kwallet": "KWallet"}


def pytest_configure(config):
    config.addinivalue_line("markers", "no_collection: needs a provider started with no default collection")


@pytest.fixture(scope="session")
def provider():
    """The provider under test. Its absence fails the test; it never skips."""
    name = os.environ.get("DEVICEID_TEST_PROVIDER")
    assert name in NAMES, "run this suite through scripts/test-providers"
    return name


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
