"""What an adversarial review of 0.1.0 found, each tried with real users, files and processes:
set-user-ID callers, modes of things DeviceID did not create, attacker links in the middle of the
store path, hostile bus addresses and machine-ID paths, scarce descriptors and address space,
stored IDs that are not DeviceID's, and a corrupt mirror repaired in silence."""
import json
import os
import shutil
import stat
import subprocess
import tempfile

import pytest

from conftest import NOBODY, as_nobody, run
from harness import envelope

def test_a_set_user_id_program_is_not_steered_by_its_callers_environment(shared_tmp):
    probe = os.path.join(shared_tmp, "probe")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "deviceid"], capture_output=True, text=True,
                           check=True).stdout.split()
    libdir = subprocess.run(["pkg-config", "--variable=libdir", "deviceid"], capture_output=True, text=True,
                            check=True).stdout.strip()
    subprocess.run(["cc", "-o", probe, os.path.join(os.environ["DEVICEID_TEST_ROOT"], "Tests/c/setuid_probe.c"),
                    *flags, f"-Wl,-rpath,{libdir}"], check=True)
    os.chmod(probe, 0o4755)  # root's, set-user-ID
    victim = os.path.join(shared_tmp, "victim")
    os.mkdir(victim)
    os.chown(victim, NOBODY, NOBODY)
    secret_dir = tempfile.mkdtemp(prefix="deviceid-root-only-")  # 0700 root
    secret = os.path.join(secret_dir, "token")
    with open(secret, "w") as f:
        f.write("0123456789abcdef0123456789abcdef\n")
    hostile = {"DEVICEID_STORE_DIR": os.path.join(shared_tmp, "attacker", "store"), "HOME": victim,
               "XDG_DATA_HOME": os.path.join(victim, "data"), "DEVICEID_MACHINE_ID_PATH": secret,
               "DEVICEID_BACKEND": "bogus", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent"}
    app = f"deviceid.setuid-test.{os.getpid()}"
    try:
        result = as_nobody([probe, "get", app], env=hostile)
        with open("/etc/machine-id") as f:
            machine = f.read().strip()
        assert f"machine={machine}" in result.stdout, result.stdout + result.stderr
        assert "get=OK" in result.stdout, "configured from nothing but root's own password entry"
        assert not os.path.exists(os.path.join(shared_tmp, "attacker")), "no directory where the caller said"
        assert os.listdir(victim) == [], "nothing created in the victim's home"
    finally:
        as_nobody([probe, "reset", app])
        shutil.rmtree(secret_dir, ignore_errors=True)


def test_existing_directories_and_files_are_never_chmodded(cli, shared_tmp):
    store = os.path.join(shared_tmp, "open-store")
    os.mkdir(store, 0o755)  # not DeviceID's: merely readable by others is used as it is
    env = {"DEVICEID_STORE_DIR": store, "DEVICEID_BACKEND": "file"}
    first = run([cli, "get", "app"], env=env)
    assert first.returncode == 0, first.stderr
    assert stat.S_IMODE(os.stat(store).st_mode) == 0o755
    [item] = [n for n in os.listdir(store) if n.startswith("id-")]
    assert stat.S_IMODE(os.stat(os.path.join(store, item)).st_mode) == 0o600, "what DeviceID creates is private"
    # A store item that is a hard link to another file is refused, and that file is untouched.
    other = os.path.join(shared_tmp, "hostname")
    shutil.copy("/etc/hostname", other)
    os.chmod(other, 0o644)
    os.unlink(os.path.join(store, item))
    os.link(other, os.path.join(store, item))
    refused = run([cli, "get", "app"], env=env)
    assert refused.returncode == 19 and "hard links" in refused.stderr, refused.stderr
    assert stat.S_IMODE(os.stat(other).st_mode) == 0o644
    # A group- or world-writable directory is refused with words saying how to fix it.
    os.chmod(store, 0o777)
    unsafe = run([cli, "get", "app"], env=env)
    assert unsafe.returncode == 19 and "chmod go-w" in unsafe.stderr
    assert stat.S_IMODE(os.stat(store).st_mode) == 0o777


def test_an_attackers_link_in_the_middle_of_the_path_is_refused(cli, shared_tmp):
    trap = os.path.join(shared_tmp, "mallory-trap")
    os.mkdir(trap)
    os.chown(trap, NOBODY, NOBODY)
    link = os.path.join(shared_tmp, "app-ids")
    os.symlink(trap, link)
    os.lchown(link, NOBODY, NOBODY)
    env = {"DEVICEID_STORE_DIR": os.path.join(link, "deviceid"), "DEVICEID_BACKEND": "file"}
    refused = run([cli, "get", "app"], env=env)
    assert refused.returncode == 19, refused.stderr
    assert "symbolic link owned by uid 65534" in refused.stderr
    assert os.listdir(trap) == [], "nothing created through the attacker's link"


def test_trusted_links_on_the_way_are_followed(cli, shared_tmp):
    """A home reached through a root-owned link, and systemd's DynamicUser= layout
    (/var/lib/NAME -> private/NAME, /var/lib/private 0700 root), simulated under a scratch root."""
    var_lib = os.path.join(shared_tmp, "var", "lib")
    os.makedirs(os.path.join(var_lib, "private", "svc"))
    os.chmod(os.path.join(var_lib, "private"), 0o700)
    os.symlink("private/svc", os.path.join(var_lib, "svc"))
    os.symlink(os.path.join(shared_tmp, "var"), os.path.join(shared_tmp, "var-link"))
    env = {"DEVICEID_STORE_DIR": os.path.join(shared_tmp, "var-link", "lib", "svc", "deviceid"),
           "DEVICEID_BACKEND": "file"}
    result = run([cli, "get", "app"], env=env)
    assert result.returncode == 0, result.stderr
    assert os.listdir(os.path.join(var_lib, "private", "svc", "deviceid"))


def test_an_autolaunch_anywhere_in_the_bus_address_is_refused(cli, store):
    result = run([cli, "--backend", "secret-service", "get", "app"],
                 env={"DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent;autolaunch:", "DISPLAY": ":99"})
    assert result.returncode == 15 and "autolaunch" in result.stderr, result.stderr
    with open("/etc/machine-id") as f:
        assert f.read().strip() not in result.stderr


def test_a_fifo_named_as_the_machine_id_is_refused_at_once(cli, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    result = run([cli, "machine-id", "raw"], env={"DEVICEID_MACHINE_ID_PATH": str(fifo)}, timeout=10)
    assert result.returncode == 18 and "not a regular file" in result.stderr


@pytest.mark.parametrize("limit", ["-n 4", "-n 5", "-n 6", "-n 7", "-n 8", "-n 9", "-v 40000", "-v 50000"])
def test_scarce_descriptors_or_address_space_fail_the_call_not_the_process(cli, store, keyring, limit):
    result = run(["bash", "-c", f'ulimit {limit}; exec "$0" --backend secret-service get "$1"', cli, "scarce.app"])
    assert 0 < result.returncode < 128, (result.returncode, result.stderr)
    assert result.returncode in (18, 20), result.stderr  # IO or NO_MEMORY, with words
    assert "ulimit" in result.stderr or "Too many open files" in result.stderr


@pytest.mark.parametrize("stored", ["00000000-0000-0000-0000-000000000000", "6ba7b810-9dad-11d1-80b4-00c04fd430c8"])
def test_a_stored_id_that_is_not_a_version_4_uuid_is_corrupt(cli, store, keyring, stored):
    app = f"nonv4.{stored[:4]}.{os.getpid()}"
    run(["secret-tool", "store", "--label=x", "service", "deviceid.app", "username", app], input=stored)
    from_keyring = run([cli, "--backend", "secret-service", "get", app])
    assert from_keyring.returncode == 17 and "version-4" in from_keyring.stderr
    run(["secret-tool", "clear", "service", "deviceid.app", "username", app])
    store.mkdir(mode=0o700, exist_ok=True)
    name, data = envelope("deviceid.app", app, f"{stored}\ncreated=1\n".encode())
    (store / name).write_bytes(data)
    os.chmod(store / name, 0o600)
    from_file = run([cli, "--backend", "file", "get", app])
    assert from_file.returncode == 17 and "version-4" in from_file.stderr


def test_a_corrupt_mirror_is_repaired_and_the_answer_says_so(cli, store, keyring):
    app = f"repair.{os.getpid()}"
    first = json.loads(run([cli, "--json", "get", app]).stdout)
    [item] = [p for p in store.iterdir() if p.name.startswith("id-")]
    damaged = bytearray(item.read_bytes())
    damaged[-1] ^= 0xFF
    item.write_bytes(bytes(damaged))
    repaired = run([cli, "--json", "get", app])
    answer = json.loads(repaired.stdout)
    assert answer["id"] == first["id"] and answer["repaired"] is True
    assert "corrupt copy" in repaired.stderr
    again = json.loads(run([cli, "--json", "get", app]).stdout)
    assert again["id"] == first["id"] and again["repaired"] is False, "the mirror is valid again"


def test_a_missing_dev_null_is_named_not_mistaken_for_a_descriptor_shortage(cli, store, keyring):
    """A bare chroot or container may have no /dev/null; 0.2.0 said "too few free file descriptors"."""
    result = run(["unshare", "--mount", "sh", "-c",
                  'mount -t tmpfs none /dev && exec "$0" --backend secret-service get devnull.app', cli])
    assert result.returncode == 18, (result.returncode, result.stderr)  # IO
    assert "/dev/null" in result.stderr and "too few free file descriptors" not in result.stderr, result.stderr


def test_the_last_error_is_cut_at_a_character_boundary_and_stays_utf8(store):
    """deviceid_last_error keeps 511 bytes: a detail longer than that, of two-byte characters at an
    odd offset, was cut inside a character."""
    import ctypes

    library = ctypes.CDLL(os.environ["DEVICEID_LIBRARY"])
    library.deviceid_last_error.restype = ctypes.c_char_p
    library.deviceid_set_store_dir.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    assert library.deviceid_set_backend(None, 2) == 0  # the file store
    lengths = set()
    for prefix in ["", "x"]:
        # A name too long to open: the detail quotes the 600-byte path.
        assert library.deviceid_set_store_dir(None, f"/tmp/{prefix}{'é' * 300}".encode()) == 0
        answer = ctypes.create_string_buffer(64)
        assert library.deviceid_get(b"utf8.app", answer, 64) == -8  # IO
        detail = library.deviceid_last_error()
        lengths.add(len(detail))
        assert detail.decode("utf-8").startswith("cannot open /tmp/")  # strict: a cut character raises
    assert lengths == {510, 511}, lengths
    library.deviceid_set_store_dir(None, None)
    library.deviceid_set_backend(None, 0)
