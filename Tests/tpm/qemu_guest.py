"""A guest under qemu with a TPM (scripts/with-qemu-tpm), as the TPM tests drive it: a busybox
script of steps, each printing NAME=RC:BASE64(OUTPUT) on a line of its own (the console is the only
way out of the guest), on the state of an swtpm machine the host spoke to first."""
import base64
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: The guest script's first line: `step NAME COMMAND…` runs COMMAND and prints its line.
STEP = """step() { name=$1; shift; out=$("$@" 2>&1); rc=$?; echo "$name=$rc:$(printf '%s' "$out" | base64 -w 0)"; }
"""


def run_guest(machine, prefix, script: Path, inputs: Path, *, arch=None, timeout=400) -> dict:
    """The guest's steps by name, as (exit status, output), after it ran `script` (which begins
    with STEP) with `prefix`'s build and `inputs` at /in, on `machine`'s TPM state (halted first)."""
    machine.tpm.halt()
    argv = [str(ROOT / "scripts" / "with-qemu-tpm"), *(["--arch", arch] if arch else []), str(prefix), str(script),
            str(inputs)]
    result = subprocess.run(argv, env=dict(os.environ, QEMU_TPM_STATE=str(machine.tpm.state)), capture_output=True,
                            text=True, timeout=timeout)
    assert result.returncode == 0, f"the guest failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    steps = {}
    for line in result.stdout.splitlines():
        name, sep, rest = line.partition("=")
        if sep and ":" in rest and name.replace("-", "").isalnum():
            rc, _, encoded = rest.partition(":")
            steps[name] = (int(rc), base64.b64decode(encoded).decode(errors="replace"))
    return steps
