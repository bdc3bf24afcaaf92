"""The arm64 build on a TPM (scripts/stages/arm64-tpm): the TPM suite's machines, Privacy CA and
WebAuthn judges (Tests/tpm, Tests/server), the arm64 build's prefix from DEVICEID_TEST_ARM64_PREFIX."""
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path += [str(ROOT / "Tests" / "tpm"), str(ROOT / "Tests" / "server")]

from machine_fixtures import ca, machine_a, machine_b, machines, make_ca, new_ca_certificate, swtpm_localca  # noqa: E402,F401


@pytest.fixture(scope="session")
def arm64_prefix():
    """The arm64 build installed by make install ARCH=arm64: a test that needs it fails without it."""
    prefix = os.environ.get("DEVICEID_TEST_ARM64_PREFIX")
    if not prefix or not Path(prefix, "bin", "deviceid").exists():
        pytest.fail("DEVICEID_TEST_ARM64_PREFIX names no arm64 build: run scripts/test arm64-tpm")
    return Path(prefix)
