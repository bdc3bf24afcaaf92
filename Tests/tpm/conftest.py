"""Fixtures of the TPM tests (machine_fixtures.py); the verifier that judges DeviceID's device side
is this checkout's server/ (Tests/server/verifier_command.py), the binding the installed one."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT / "Tests" / "server"))

from machine_fixtures import (  # noqa: E402,F401
    ca, enrolled_a, machine_a, machine_b, machines, make_ca, new_ca_certificate, swtpm_localca,
)
