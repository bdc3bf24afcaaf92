"""Secrets leave no copies behind: after a store, a lookup and deviceid_free, a core dump of the
process (gcore) holds the secret nowhere, on the file and on the keyring path. And a secret over
the 65,536-byte limit is refused on read too."""
import os
import secrets
import signal
import subprocess

import pytest

from conftest import run


@pytest.mark.parametrize("backend", ["file", "keyring"])
def test_no_copy_of_a_secret_survives_in_memory(backend, store, keyring, tmp_path):
    secret = secrets.token_hex(24).encode()  # 48 random hex digits: found only where it was copied
    canary = secrets.token_hex(24)             # the program keeps it reversed on its heap
    process = subprocess.Popen([os.environ["DEVICEID_TEST_HYGIENE"], backend, canary], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        process.stdin.write(secret)
        process.stdin.close()
        assert process.stdout.readline() == b"ready\n", process.stderr.read()
        core = tmp_path / "core"
        dump = run(["gcore", "-o", str(core), str(process.pid)], timeout=120)
        assert dump.returncode == 0, dump.stderr
        image = (tmp_path / f"core.{process.pid}").read_bytes()
        assert image.count(canary[::-1].encode()) == 1, "the dump holds the process's heap"
        assert image.count(secret) == 0, f"{image.count(secret)} copies of the secret in memory"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
        run([os.environ["DEVICEID_TEST_CLI"], "--backend", "file" if backend == "file" else "secret-service",
             "secret", "delete", "hygiene.service", "hygiene.account"])


# secret-tool stores at most 8192 bytes; libsecret itself has no limit.
STORE_BIG = """
import gi, sys
gi.require_version("Secret", "1")
from gi.repository import Secret
attributes = {"service": Secret.SchemaAttributeType.STRING, "username": Secret.SchemaAttributeType.STRING}
schema = Secret.Schema.new("org.example.Big", Secret.SchemaFlags.DONT_MATCH_NAME, attributes)
assert Secret.password_store_sync(schema, {"service": "hygiene.big", "username": "a"}, Secret.COLLECTION_DEFAULT,
                                  "big", "x" * 70000, None)
"""


def test_a_keyring_secret_over_the_limit_is_too_large(cli, store, keyring):
    stored = run(["/usr/bin/python3", "-c", STORE_BIG])  # the system's python, with gir1.2-secret-1
    assert stored.returncode == 0, stored.stderr
    looked = run([cli, "secret", "lookup", "hygiene.big", "a"])
    assert looked.returncode == 21 and "the limit is 65536" in looked.stderr, looked.stderr
    run(["secret-tool", "clear", "service", "hygiene.big", "username", "a"])
