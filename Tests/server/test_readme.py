"""The README's "Server" section runs as printed, in both modes: from the verifier's wheel (pip,
with its service and postgresql extras from PyPI) to a verified request and App Attest's
registration and assertions, the device a swtpm (DEVICEID_TPM_TCTI, as scripts/with-swtpm sets
it) reached through the installed `deviceid` command, on SQLite and again on PostgreSQL; and it
stops, rather than waits for ever, when `serve` exits."""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT

MARKER = "<!-- server: Tests/server/test_readme.py runs this block as printed -->"


APP_ATTEST = "<!-- app attest: Tests/server/test_readme.py runs this block as printed, after the one above -->"


def block(marker: str, language: str) -> str:
    text = (ROOT / "README.md").read_text()
    assert marker in text, f"README.md lost its block's marker {marker}"
    match = re.search(re.escape(marker) + r"\n```" + language + r"\n(.*?)\n```", text, re.DOTALL)
    assert match, f"the marker is not followed by a ```{language} block"
    return match.group(1)


@pytest.fixture(scope="module")
def cli():
    path = os.environ.get("DEVICEID_TEST_CLI")
    if not path:
        pytest.fail("DEVICEID_TEST_CLI is not set (. scripts/test-env)")
    return Path(path)


def readme_environment(cli, machine, tmp_path, verifier_wheel):
    """What the block runs in: the device's `deviceid` and its TPM, the wheel in ./dist, no PYTHONPATH."""
    for tool in ("curl", "swtpm"):
        assert shutil.which(tool), f"{tool} is missing: run scripts/install-deps"
    (tmp_path / "dist").mkdir()
    shutil.copy(verifier_wheel, tmp_path / "dist")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DATABASE")}
    env.update(PATH=f"{cli.parent}:/usr/bin:/bin", DEVICEID_TPM_TCTI=machine.tpm.tcti, HOME=str(tmp_path))
    return env


# A block that fails must not leave its background serve holding the output pipe (pytest would
# wait out the timeout) and the port (the next test's serve could not bind it).
STOP_SERVE_ON_EXIT = "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n"


#: What the README's install gives the service for PostgreSQL: psycopg's C implementation
#: (psycopg[binary], the [postgresql] extra), which halves a statement's cost to a worker against
#: the pure-Python one Debian packages (docs/SERVER.md, "Which install, and its speed").
PSYCOPG_IMPLEMENTATION = "ca/bin/python -c 'import psycopg; print(psycopg.pq.__impl__)'\n"


@pytest.mark.parametrize("mode", ["sqlite", "postgresql"])
def test_the_readme_server_section_runs_as_printed(mode, verifier_wheel, cli, machine_a, postgresql, tmp_path):
    env = readme_environment(cli, machine_a, tmp_path, verifier_wheel)
    if mode == "postgresql":
        env["DATABASE"] = postgresql.new_database()
    # the blocks as printed (the app server's Python in the venv the first made), then the
    # background service stopped
    script = (STOP_SERVE_ON_EXIT + block(MARKER, "sh") + "\nca/bin/python - <<'APP_ATTEST'\n" + block(APP_ATTEST, "python")
              + "\nAPP_ATTEST\nkill %1 && wait\n" + PSYCOPG_IMPLEMENTATION)
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    *_, verification_line, device_line, counter_line, implementation = result.stdout.strip().splitlines()
    assert implementation == "binary", "the production install runs psycopg's C implementation (docs/SERVER.md)"
    device = json.loads(device_line)  # DeviceCheck for Linux: the tenant's bits, as written
    assert (device["bits"], device["months"][1:], device["activity"]) == ([True, False, False], [None, None], "LEVEL_1")
    verification = json.loads(verification_line)
    assert int(counter_line) >= 3, "three assertions, each counted by the TPM"
    expected = subprocess.run([str(cli), "hardware-id", "com.example.app"], env=env, capture_output=True, text=True,
                              timeout=120)
    assert expected.returncode == 0, expected.stderr
    assert verification["type"] == "deviceid.verification"
    assert (verification["app_id"], verification["hardware_id"], verification["risk"]) == (
        "com.example.app", expected.stdout.strip(), 1)


def test_the_readme_server_section_stops_when_serve_exits(verifier_wheel, cli, machine_a, tmp_path):
    """A serve that cannot start (a database URL it refuses) ends the block, with serve's words."""
    env = dict(readme_environment(cli, machine_a, tmp_path, verifier_wheel), DATABASE="nosuchdb://x")
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", STOP_SERVE_ON_EXIT + block(MARKER, "sh")], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode != 0 and result.stdout == "", result
    assert "python3 -m deviceid_verifier: error: " in result.stderr and "No such process" in result.stderr, \
        result.stderr
