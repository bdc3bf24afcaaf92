"""The file store when the world around it breaks: full disk, read-only mount, another user.
Each ends in its documented status; what was handed out stays readable; the keyring (the mirror's
other half) still answers where it exists."""
import os
import shutil
import subprocess
import tempfile

import pytest

from conftest import NOBODY, as_nobody, run

@pytest.fixture
def mounted(tmp_path):
    """A tmpfs of 64 KiB of the test's own."""
    mount = tmp_path / "mnt"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(directory):
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 512)
    except OSError as error:
        assert error.errno == 28  # ENOSPC: the disk is full now
    finally:
        os.close(fd)


def test_full_disk(cli, mounted):
    env = {"DEVICEID_STORE_DIR": str(mounted / "store"), "DEVICEID_BACKEND": "file"}
    first = run([cli, "get", "before.app"], env=env).stdout.strip()
    fill(mounted)
    assert run([cli, "get", "before.app"], env=env).stdout.strip() == first, "handed out: still readable"
    new = run([cli, "get", "after.app"], env=env)
    assert new.returncode == 18 and "No space left on device" in new.stderr
    stored = run([cli, "secret", "store", "s", "a"], input="x" * 20000, env=env)
    assert stored.returncode == 18
    assert not [n for n in os.listdir(mounted / "store") if n.startswith(".tmp-")], "no temporary left behind"


def test_full_disk_with_keyring_still_answers(cli, mounted, keyring):
    env = {"DEVICEID_STORE_DIR": str(mounted / "store")}
    assert run([cli, "get", "warmup.app"], env=env).returncode == 0
    fill(mounted)
    result = run([cli, "--json", "get", "fresh.app"], env=env)
    assert result.returncode == 0, result.stderr
    assert '"source":"created"' in result.stdout
    assert run([cli, "--json", "get", "fresh.app"], env=env).stdout.count('"source":"keyring"') == 1


def test_read_only_store(cli, mounted):
    env = {"DEVICEID_STORE_DIR": str(mounted / "store"), "DEVICEID_BACKEND": "file"}
    first = run([cli, "get", "app"], env=env).stdout.strip()
    subprocess.run(["mount", "-o", "remount,ro", str(mounted)], check=True)
    assert run([cli, "get", "app"], env=env).stdout.strip() == first
    new = run([cli, "get", "other.app"], env=env)
    assert new.returncode == 18 and "Read-only file system" in new.stderr
    assert run([cli, "reset", "app"], env=env).returncode == 18


def test_another_user_cannot_read_or_use_a_users_store(cli, shared_tmp):
    store = os.path.join(shared_tmp, "root-store")
    env = {"DEVICEID_STORE_DIR": store, "DEVICEID_BACKEND": "file"}
    assert run([cli, "get", "app"], env=env).returncode == 0
    assert run([cli, "secret", "store", "s", "a"], input="hush", env=env).returncode == 0
    result = as_nobody([cli, "secret", "lookup", "s", "a"], env=env)
    assert result.returncode == 19 and "hush" not in result.stdout
    assert "Permission denied" in result.stderr
    files = os.listdir(store)
    for name in files:
        mode = os.stat(os.path.join(store, name)).st_mode & 0o777
        assert mode == 0o600, (name, oct(mode))
    assert os.stat(store).st_mode & 0o777 == 0o700


def test_a_non_root_user_gets_its_own_working_store(cli, shared_tmp):
    home = os.path.join(shared_tmp, "home")
    os.mkdir(home)
    os.chown(home, NOBODY, NOBODY)
    env = {"HOME": home, "DEVICEID_STORE_DIR": None, "XDG_DATA_HOME": None, "DEVICEID_BACKEND": "file"}
    first = as_nobody([cli, "get", "app"], env=env)
    assert first.returncode == 0, first.stderr
    assert as_nobody([cli, "get", "app"], env=env).stdout == first.stdout
    store = os.path.join(home, ".local/share/deviceid")
    assert os.stat(store).st_uid == NOBODY and os.stat(store).st_mode & 0o777 == 0o700
    # Root's store handed to that user is foreign to root: refused, not used.
    env_root = {"DEVICEID_STORE_DIR": store, "DEVICEID_BACKEND": "file"}
    refused = run([cli, "get", "app"], env=env_root)
    assert refused.returncode == 19 and "owned by uid 65534" in refused.stderr


def test_permission_denied_on_the_store_directory_as_non_root(cli, shared_tmp):
    store = os.path.join(shared_tmp, "locked-store")
    os.mkdir(store, 0o700)  # root's, unreadable to others
    result = as_nobody([cli, "get", "app"], env={"DEVICEID_STORE_DIR": store, "DEVICEID_BACKEND": "file"})
    assert result.returncode == 19
    assert "Permission denied" in result.stderr
