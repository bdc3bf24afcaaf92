"""schemathesis (PyPI, into a venv this test makes) against the service's own /openapi.json: every
operation, generated and mutated bodies, every check of its but one, no failure. The check left
out, positive_data_acceptance, expects every schema-valid body to be accepted: a JSON Schema can
say "base64", not "base64 of a DER certificate whose key is an RSA 2048 EK", so a schema-valid
message is still refused (400 malformed, 403 for a failed proof), as it must be."""
import subprocess
import sys

import pytest

from conftest import Service

SCHEMATHESIS = "schemathesis==4.32.5"
EXAMPLES = 100
SEED = 20261202  # fixed: the same cases on every run; change it to explore others


@pytest.fixture(scope="module")
def schemathesis(tmp_path_factory):
    venv = tmp_path_factory.mktemp("schemathesis-venv")
    made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    installed = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", SCHEMATHESIS], capture_output=True,
                               text=True, timeout=600)
    assert installed.returncode == 0, f"pip install {SCHEMATHESIS} failed (PyPI reachable?):\n{installed.stderr}"
    return venv / "bin" / "schemathesis"


def test_schemathesis_finds_no_5xx_and_no_response_off_its_schema(schemathesis, ca_files, ek_anchors, tmp_path):
    service = Service(f"sqlite:///{tmp_path}/schemathesis.sqlite3", ca_files, ek_anchors, workers=2)
    try:
        run = subprocess.run([str(schemathesis), "run", f"{service.url}/openapi.json", "--checks", "all",
                              "--exclude-checks", "positive_data_acceptance", "--max-examples", str(EXAMPLES),
                              "--seed", str(SEED), "--no-color"], capture_output=True, text=True, timeout=900,
                             cwd=tmp_path)  # its .schemathesis cache stays out of the tree
        log = service.output()
    finally:
        service.stop()
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert "Tested: 12" in run.stdout, run.stdout[-3000:]
    assert "Traceback" not in log, log[-4000:]  # no exception reached the service's log either
