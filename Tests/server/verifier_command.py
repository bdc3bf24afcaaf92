"""The verifier as the tests use it: imported from this checkout's server/ (its one place), put
first on sys.path when this module is imported, before any installed copy; and run as operators
run it, `python3 -m deviceid_verifier`, with the same package. The client binding, when a test
needs one, stays the installed copy that PYTHONPATH names (scripts/test-env)."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "server"
if sys.path[:1] != [str(SERVER)]:
    sys.path.insert(0, str(SERVER))

from deviceid_verifier import REASONS  # noqa: E402


def environment(**extra: str) -> dict:
    """This process's environment for a `python3 -m deviceid_verifier` child: server/ first on PYTHONPATH."""
    path = os.pathsep.join(p for p in (str(SERVER), os.environ.get("PYTHONPATH")) if p)
    return dict(os.environ, PYTHONPATH=path, **extra)


def cli(*args, input=None, text=True, timeout=60) -> subprocess.CompletedProcess:
    """Run `python3 -m deviceid_verifier ARGS` (paths and numbers as they are)."""
    return subprocess.run([sys.executable, "-m", "deviceid_verifier", *map(str, args)], input=input,
                          capture_output=True, text=text, timeout=timeout, env=environment())


def cli_rejection(result: subprocess.CompletedProcess) -> str:
    """The reason of a command that rejected its message: exit 1, {"rejected", "message"} on stderr."""
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert result.stdout == ""
    report = json.loads(result.stderr)
    assert set(report) == {"rejected", "message"} and report["message"]
    assert report["rejected"] in REASONS
    return report["rejected"]
