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


def captured(command, env, tmp_path):
    """The raw D-Bus messages of the session bus while `command` runs, and its result. The monitor
    is known to be recording once a marker call of our own shows up in its capture."""
    capture = tmp_path / "wire"
    marker = f"deviceid.test.marker{uuid.uuid4().hex}"
    with open(capture, "wb") as out:
        monitor = subprocess.Popen(["dbus-monitor", "--session", "--binary"], stdout=out, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            run(["gdbus", "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path",
                 "/org/freedesktop/DBus", "--method", "org.freedesktop.DBus.NameHasOwner", marker])
            if marker.encode() in capture.read_bytes():
                break
            time.sleep(0.05)
        else:
            raise AssertionError("dbus-monitor recorded nothing")
        result = run(command, env=env)
        time.sleep(0.3)  # the last replies reach the capture
    finally:
        monitor.terminate()
        monitor.wait()
    return capture.read_bytes(), result


# The marshalled string argument "plain" of OpenSession: length 5, the bytes, a NUL.
PLAIN = b"\x05\x00\x00\x00plain\x00"


def test_a_callers_secret_never_crosses_the_bus_in_the_clear(keyring, tmp_path, cli):
    secret = f"hunter2-{uuid.uuid4().hex}"
    account = f"acct-{uuid.uuid4().hex[:8]}"
    env = {"DEVICEID_STORE_DIR": str(tmp_path / "store"), "DEVICEID_BACKEND": "secret-service"}
    wire, result = captured(["sh", "-c", f"printf %s {secret} | {cli} secret store example.test {account} && "
                                         f"{cli} secret lookup example.test {account} && "
                                         f"{cli} secret delete example.test {account}"], env, tmp_path)
    assert result.returncode == 0 and result.stdout == secret, (result.stdout, result.stderr)
    assert b"dh-ietf1024-sha256-aes128-cbc-pkcs7" in wire, "the encrypted session was not opened"
    assert b"CreateItem" in wire and b"GetSecrets" in wire, "the monitor missed a step: the check could not fail"
    assert PLAIN not in wire
    assert secret.encode() not in wire


def test_an_identifier_record_crosses_plain_and_opens_no_encrypted_session(keyring, tmp_path, cli):
    app = f"com.example.plain-{uuid.uuid4().hex[:8]}"
    env = {"DEVICEID_STORE_DIR": str(tmp_path / "store"), "DEVICEID_BACKEND": None}
    wire, result = captured([cli, "get", "--json", app], env, tmp_path)
    assert result.returncode == 0, result.stderr
    identifier = json.loads(result.stdout)["id"]
    assert identifier.encode() in wire, "the record crosses in the plain session"
    assert b"CreateItem" in wire and PLAIN in wire and b"dh-ietf1024" not in wire
