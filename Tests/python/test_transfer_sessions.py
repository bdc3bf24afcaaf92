"""How item values cross the bus (SecretService.Transfer): a caller's secret in libsecret's encrypted
transfer session, so that it never appears in the clear in a bus message; DeviceID's identifier
records in the "plain" session, which needs neither libsecret nor a Diffie-Hellman exchange.

Checked on the wire: a monitor of the private session bus (dbus-monitor --binary, the raw
messages) records each conversation, and the bytes are searched."""
import json
import subprocess
import time
import uuid

from harness import run


def captured(command, env):
    """The raw D-Bus messages of the session bus while `command` runs, and its result."""
    monitor = subprocess.Popen(["dbus-monitor", "--session", "--binary"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
    time.sleep(0.5)  # the monitor is registered before the command talks
    try:
        result = run(command, env=env)
        time.sleep(0.3)
    finally:
        monitor.terminate()
    return monitor.communicate()[0], result


def test_a_callers_secret_never_crosses_the_bus_in_the_clear(keyring, tmp_path, cli):
    secret = f"hunter2-{uuid.uuid4().hex}"
    account = f"acct-{uuid.uuid4().hex[:8]}"
    env = {"DEVICEID_STORE_DIR": str(tmp_path / "store"), "DEVICEID_BACKEND": "secret-service"}
    wire, result = captured(["sh", "-c", f"printf %s {secret} | {cli} secret store example.test {account} && "
                                         f"{cli} secret lookup example.test {account} && "
                                         f"{cli} secret delete example.test {account}"], env)
    assert result.returncode == 0 and result.stdout == secret, (result.stdout, result.stderr)
    assert b"dh-ietf1024-sha256-aes128-cbc-pkcs7" in wire, "the encrypted session was not opened"
    assert b"OpenSession" in wire and b"GetSecrets" in wire, "the monitor saw nothing: the check could not fail"
    assert secret.encode() not in wire


def test_an_identifier_record_crosses_plain_and_opens_no_encrypted_session(keyring, tmp_path, cli):
    app = f"com.example.plain-{uuid.uuid4().hex[:8]}"
    env = {"DEVICEID_STORE_DIR": str(tmp_path / "store"), "DEVICEID_BACKEND": None}
    wire, result = captured([cli, "get", "--json", app], env)
    assert result.returncode == 0, result.stderr
    identifier = json.loads(result.stdout)["id"]
    assert identifier.encode() in wire, "the record crosses in the plain session"
    assert b"plain" in wire and b"dh-ietf1024" not in wire
