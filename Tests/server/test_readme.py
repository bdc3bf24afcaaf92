"""The README's "Server" section runs as printed, in both modes: from the wheel (pip, with the
[verifier] extra from PyPI) to a verified request and App Attest's registration and assertions,
the device a swtpm reached through the installed `deviceid` command, on SQLite and again on
PostgreSQL. scripts/stages/wheel runs it
with the wheel it built (DEVICEID_TEST_WHEEL)."""
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
def wheel():
    path = os.environ.get("DEVICEID_TEST_WHEEL")
    if not path or not Path(path).is_file():
        pytest.fail("DEVICEID_TEST_WHEEL names no wheel: scripts/test wheel runs this test with the one it built")
    return Path(path)


@pytest.fixture(scope="module")
def cli():
    path = os.environ.get("DEVICEID_TEST_CLI")
    if not path:
        pytest.fail("DEVICEID_TEST_CLI is not set (. scripts/test-env)")
    return Path(path)


@pytest.mark.parametrize("mode", ["sqlite", "postgresql"])
def test_the_readme_server_section_runs_as_printed(mode, wheel, cli, machine_a, postgresql, tmp_path):
    for tool in ("curl", "swtpm"):
        assert shutil.which(tool), f"{tool} is missing: run scripts/install-deps"
    (tmp_path / "dist").mkdir()
    shutil.copy(wheel, tmp_path / "dist")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DATABASE")}
    env.update(PATH=f"{cli.parent}:/usr/bin:/bin", DEVICEID_TPM_TCTI=machine_a.tpm.tcti, HOME=str(tmp_path))
    if mode == "postgresql":
        env["DATABASE"] = postgresql.new_database()
    # the blocks as printed (the app server's Python in the venv the first made; a newline after
    # the verdict curl prints without one), then the background service stopped
    script = (block(MARKER, "sh") + "\necho\nca/bin/python - <<'APP_ATTEST'\n" + block(APP_ATTEST, "python")
              + "\nAPP_ATTEST\nkill %1 && wait\n")
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    *_, verification_line, counter_line = result.stdout.strip().splitlines()
    verification = json.loads(verification_line)
    assert int(counter_line) >= 3, "three assertions, each counted by the TPM"
    expected = subprocess.run([str(cli), "hardware-id", "com.example.app"], env=env, capture_output=True, text=True,
                              timeout=120)
    assert expected.returncode == 0, expected.stderr
    assert verification["type"] == "deviceid.verification"
    assert (verification["app_id"], verification["hardware_id"], verification["risk"]) == (
        "com.example.app", expected.stdout.strip(), 1)
