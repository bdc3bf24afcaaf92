"""A TPM that lies, through the device TCTI (issue 53): test_hostile_tpm.py's lies told to DeviceID
on a resource manager of the kernel's own, in Debian's kernel under qemu (scripts/with-qemu-tpm).
In the guest, the kernel's vtpm proxy (tpm_vtpm_proxy.ko, /dev/vtpmx) makes a new TPM whose
commands come to a program of the tests' own (Tests/tpm/vtpm_liar.c): it sends each on to the real
TPM and gives its answer back, but for one, which it rewrites; DeviceID is pointed at the new
TPM's /dev/tpmrmN (DEVICEID_TPM_TCTI=device:/dev/tpmrmN). Three lies, each refused with the words
"answered … with something other than was asked for", each followed by the same call on the same
device answered honestly, which succeeds with the host's answer through swtpm's socket:

- another app's CreatePrimary answer given for this app's key (a public area swapped, in an
  answer of exactly the shape asked for): the salted session's HMAC tells it from the TPM's;
- one bit of the signature in Certify's answer (an answer changed under the salted session);
- DeviceID's NV_ReadPublic of the EK certificate's index cut to 12 bytes, its header saying 12
  (a short answer: refused, never completed from the bytes of an earlier one).

One boot, about 20 s, in the tpm lane."""
import json
import subprocess
from pathlib import Path

import pytest

from qemu_guest import STEP, run_guest
from test_deviceid_device import APP_A, APP_B, cli_path, deviceid, hardware_id
from test_hostile_tpm import IO, NONCE, app_unique

ROOT = Path(__file__).resolve().parents[2]
TPM2_CC_CERTIFY, EK_CERTIFICATE_RSA = 0x148, 0x01C00002

# `liar RULE ARGS…` starts the liar and points DeviceID at its resource manager; `honest` stops it.
GUEST = STEP + f"""
insmod /lib/modules/tpm_vtpm_proxy.ko
liar() {{
    /in/vtpm_liar "$@" > /tmp/liar &
    LIAR=$!
    for _ in $(seq 100); do DEV=$(head -n 1 /tmp/liar); [ -n "$DEV" ] && [ -e "$DEV" ] && break; sleep 0.1; done
    export DEVICEID_TPM_TCTI=device:$DEV
}}
honest() {{ kill $LIAR; wait $LIAR; unset DEVICEID_TPM_TCTI; }}
liar replay {app_unique(APP_B).hex()} {app_unique(APP_A).hex()}
step replay-device echo $DEV
step replay-source deviceid hardware-id {APP_B}
step replay deviceid hardware-id {APP_A}
step replay-after deviceid hardware-id {APP_A}
honest
liar flip {TPM2_CC_CERTIFY:x}
step flip deviceid attest certify {APP_A} --nonce {NONCE}
step flip-after deviceid attest certify {APP_A} --nonce {NONCE}
honest
liar short {EK_CERTIFICATE_RSA:08x} 2
step short deviceid attest enrol {APP_A}
step short-after deviceid attest enrol {APP_A}
honest
"""


@pytest.fixture(scope="module")
def booted(machines, tmp_path_factory):
    """(host's answers through swtpm's socket, the guest's steps by name as (exit status, output))."""
    machine = machines("hostile-device")
    host = {"a": hardware_id(machine, APP_A), "b": hardware_id(machine, APP_B)}
    request = deviceid(machine, "attest", "enrol", APP_A)
    assert request.returncode == 0, request.stderr
    host["enrol"] = json.loads(request.stdout)
    work = tmp_path_factory.mktemp("qemu")
    (work / "in").mkdir()
    (work / "guest.sh").write_text(GUEST)
    built = subprocess.run(["cc", "-std=gnu11", "-O2", "-Wall", "-Werror", "-o", str(work / "in" / "vtpm_liar"),
                            str(ROOT / "Tests" / "tpm" / "vtpm_liar.c")], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    steps = run_guest(machine, Path(cli_path()).resolve().parents[1], work / "guest.sh", work / "in")
    assert "short-after" in steps, f"the guest did not reach its last step: {steps}"
    return host, steps


def refused(steps, name, stage):
    rc, words = steps[name]
    assert rc == IO, f"{name}: exit {rc}, {words}"
    assert "other than was asked" in words and stage in words, words


def test_the_lies_reach_deviceid_through_a_resource_manager_of_the_kernels(booted):
    rc, device = booted[1]["replay-device"]
    assert rc == 0 and device.startswith("/dev/tpmrm") and device != "/dev/tpmrm0", device


def test_another_apps_key_answer_is_refused_then_the_honest_one_taken(booted):
    host, steps = booted
    assert steps["replay-source"] == (0, host["b"]), "the liar kept another app's answer, passed honestly"
    refused(steps, "replay", "TPM2_CreatePrimary")
    assert host["b"] not in steps["replay"][1]
    assert steps["replay-after"] == (0, host["a"])


def test_a_signature_changed_under_the_salted_session_is_refused_then_the_honest_one_taken(booted):
    host, steps = booted
    refused(steps, "flip", "TPM2_Certify")
    rc, evidence = steps["flip-after"]
    assert rc == 0, evidence
    assert json.loads(evidence)["hardware_id"] == host["a"]


def test_a_short_answer_is_refused_then_the_whole_one_taken(booted):
    host, steps = booted
    refused(steps, "short", "reading the EK certificates' NV indices")
    rc, request = steps["short-after"]
    assert rc == 0 and json.loads(request) == host["enrol"], request
