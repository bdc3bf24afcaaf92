"""Fixtures of the TPM tests (machine_fixtures.py); the verifier that judges DeviceID's device side
is this checkout's server/ (Tests/server/verifier_command.py), the binding the installed one."""
import os
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT / "Tests" / "server"))

from machine_fixtures import (  # noqa: E402,F401
    ca, enrolled_a, machine_a, machine_b, machines, make_ca, new_ca_certificate, swtpm_localca,
)


@pytest.fixture(autouse=True, scope="session")
def _own_store_directory():
    """Every conversation looks for its TPM pin in the context's store (docs/STATE.md, "TPM
    pins"), and a root test without a store directory of its own would leave one per swtpm in
    /var/lib/deviceid: the session's processes get a store of the session's, unless the caller
    chose one (a test that needs its own sets DEVICEID_STORE_DIR in its process's environment)."""
    if "DEVICEID_STORE_DIR" in os.environ:
        yield
        return
    with tempfile.TemporaryDirectory(prefix="deviceid-tpm-store-") as store:
        os.chmod(store, 0o700)
        os.environ["DEVICEID_STORE_DIR"] = store
        try:
            yield
        finally:
            del os.environ["DEVICEID_STORE_DIR"]
