"""What every Python test suite of the project shares (this one and Tests/providers): where the
repository is, the tools scripts/test built, and running a command."""
import hashlib
import os
import re
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]

# A canonical lowercase version-4 UUID (RFC 9562): what every identifier DeviceID mints looks like.
UUID_V4_TEXT = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
UUID_V4 = re.compile(f"^{UUID_V4_TEXT}$")


def tool(name):
    value = os.environ.get(name)
    assert value, f"{name} is not set: run the suite through scripts/test"
    return value


def run(args, *, input=None, env=None, timeout=60):
    """Runs a command; returns CompletedProcess with text stdout/stderr (bytes when input is bytes)."""
    merged = dict(os.environ)
    if env:
        for key, value in env.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
    text = not isinstance(input, bytes)
    return subprocess.run(args, input=input, env=merged, capture_output=True, text=text, timeout=timeout)


def secret_service_owner():
    """The process that owns org.freedesktop.secrets on the session bus: (pid, its comm), or
    (None, None) when nobody does."""
    out = run(["gdbus", "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
               "--method", "org.freedesktop.DBus.GetConnectionUnixProcessID", "org.freedesktop.secrets"]).stdout
    m = re.search(r"\(uint32 (\d+),\)", out)
    if not m:
        return None, None
    pid = int(m.group(1))
    try:
        return pid, pathlib.Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return pid, None


def envelope(service, account, value):
    """A file-store item in the documented format of 0.1.0 and since (FileEnvelope.swift):
    the file's name and bytes, for an identifier (kind 2)."""
    key = service.encode() + b"\0" + account.encode()
    body = b"DEVICEID" + bytes([1, 2, 0, 0]) + len(key).to_bytes(4, "little") + len(value).to_bytes(4, "little")
    body += key + value
    name = "id-" + hashlib.sha256(bytes([2]) + key).hexdigest()[:40]
    return name, body + hashlib.sha256(body).digest()
