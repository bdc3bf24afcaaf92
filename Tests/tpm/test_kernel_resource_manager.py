"""The kernel's TPM resource manager, /dev/tpmrm0, the path DeviceID takes by default (issue 34):
Debian's own kernel boots under qemu with a TPM backed by swtpm (scripts/with-qemu-tpm), and the
release build runs inside with no DEVICEID_TPM_TCTI. The TPM's state is an swtpm the host spoke to
first through its socket, so each answer from the guest is checked against the host's: the
hardware ID, the enrolment request, the Privacy CA's challenge activated in the guest, and the
evidence the guest made, verified on the host. Also in the guest: the raw /dev/tpm0 refused by
any name, a user outside the tss group refused with PERMISSION and the words, the same user let
in once in the group, eight processes at once, which only a resource manager serves (swtpm's
socket takes one connection at a time), calls with a short deadline while other processes keep the
TPM busy (Tests/tpm/deadline_under_load.c), and children forked during another thread's TPM calls
(Tests/tpm/fork_during_tpm_calls.c)."""
import base64
import json
import subprocess
from pathlib import Path

import pytest

from deviceid_verifier import Verifier
from qemu_guest import STEP, run_guest
from test_deviceid_device import cli_path, deviceid, hardware_id

ROOT = Path(__file__).resolve().parents[2]
APP = "com.example.kernel-resource-manager"
PARALLEL, PARALLEL_DEADLINE_MS = 8, 60000
FORK_SECONDS, FORK_DEADLINE_MS = 3, 3000
LOADERS, LOADED_CALLS, LOADED_DEADLINE_MS = 6, 20, 1

# Each step prints NAME=RC:BASE64(OUTPUT) on a line of its own (busybox sh; the console is the
# only way out of the guest).
GUEST = STEP + f"""
APP={APP}
step hardware-id deviceid hardware-id $APP
step enrol deviceid attest enrol $APP
step activate sh -c "deviceid attest activate $APP < /in/challenge.json"
step certify deviceid attest certify $APP --nonce "$(cat /in/nonce)"
step doctor deviceid --json doctor
step sealed-by-host env DEVICEID_BACKEND=file DEVICEID_STORE_DIR=/in/sealed deviceid get $APP
step sealed-here env DEVICEID_BACKEND=file DEVICEID_STORE_DIR=/tmp/sealed deviceid --protection this-device-only get $APP
step sealed-again env DEVICEID_BACKEND=file DEVICEID_STORE_DIR=/tmp/sealed deviceid get $APP
step raw-by-name env DEVICEID_TPM_TCTI=device:/dev/tpm0 deviceid hardware-id $APP
ln -s /dev/tpm0 /tmp/tpmrm0
step raw-by-link env DEVICEID_TPM_TCTI=device:/tmp/tpmrm0 deviceid hardware-id $APP
step outsider su -s /bin/sh nobody -c "deviceid hardware-id $APP"
sed -i 's/^tss:x:103:$/tss:x:103:nobody/' /etc/group
step member su -s /bin/sh nobody -c "deviceid hardware-id $APP"
step fork /in/fork_during_tpm_calls $APP {FORK_SECONDS} {FORK_DEADLINE_MS} /tmp/children.lock
step loaded /in/deadline_under_load $APP {LOADERS} {LOADED_CALLS} {LOADED_DEADLINE_MS}
for k in $(seq {PARALLEL}); do deviceid --timeout {PARALLEL_DEADLINE_MS} attest certify $APP --nonce AAAA > /tmp/p$k 2>&1 & done
wait
step parallel sh -c 'for k in $(seq {PARALLEL}); do grep -c "\\"type\\":\\"deviceid.attestation\\"" /tmp/p$k || tail -n 1 /tmp/p$k; done'
"""


@pytest.fixture(scope="module")
def booted(machines, make_ca, tmp_path_factory):
    """(host's answers, the guest's steps by name as (exit status, output)): the host enrols
    through swtpm's socket, hands the same TPM state to qemu, and the guest runs GUEST."""
    machine = machines("qemu")
    host = {"hardware-id": hardware_id(machine, APP)}
    request = deviceid(machine, "attest", "enrol", APP)
    assert request.returncode == 0, request.stderr
    host["enrol"] = json.loads(request.stdout)
    host["ca"] = ca = make_ca("deviceid kernel resource manager CA")
    host["verifier"] = verifier = Verifier([ca.certificate])
    host["nonce"] = nonce = verifier.new_nonce()
    work = tmp_path_factory.mktemp("qemu")
    (work / "in").mkdir()
    # A this-device-only ID sealed through the socket, in a file store the guest is given.
    sealed = deviceid(machine, "--protection", "this-device-only", "get", APP,
                      env={"DEVICEID_BACKEND": "file", "DEVICEID_STORE_DIR": str(work / "in" / "sealed")})
    assert sealed.returncode == 0, sealed.stderr
    host["sealed"] = sealed.stdout.strip()
    (work / "in" / "challenge.json").write_text(ca.challenge(request.stdout))
    (work / "in" / "nonce").write_text(base64.b64encode(nonce).decode())
    (work / "guest.sh").write_text(GUEST)
    prefix = Path(cli_path()).resolve().parents[1]
    for program in ("fork_during_tpm_calls", "deadline_under_load"):
        built = subprocess.run(["cc", "-O2", "-o", str(work / "in" / program), str(ROOT / "Tests" / "tpm" / f"{program}.c"),
                                f"-I{prefix}/include", f"-L{prefix}/lib", "-ldeviceid", "-lpthread"],
                               capture_output=True, text=True)
        assert built.returncode == 0, built.stderr
    steps = run_guest(machine, prefix, work / "guest.sh", work / "in")
    assert "parallel" in steps, f"the guest did not reach its last step: {steps}"
    return host, steps


def test_the_hardware_id_through_tpmrm0_is_the_one_through_swtpms_socket(booted):
    host, steps = booted
    assert steps["hardware-id"] == (0, host["hardware-id"])


def test_enrolment_activation_and_evidence_through_tpmrm0(booted):
    """The guest's request is the host's (the same EK certificates and AK), the Privacy CA accepts
    the credential the guest's TPM recovered, and the guest's evidence, with the AK certificate
    issued for it, proves the host's hardware ID."""
    host, steps = booted
    rc, enrol = steps["enrol"]
    assert rc == 0 and json.loads(enrol) == host["enrol"]
    rc, response = steps["activate"]
    assert rc == 0, response
    certificate = json.loads(host["ca"].finish(response))["certificate"]
    rc, evidence = steps["certify"]
    assert rc == 0, evidence
    attestation = host["verifier"].verify(json.dumps({**json.loads(evidence), "ak_certificate": certificate}),
                                          host["nonce"], app_id=APP)
    assert attestation.hardware_id == host["hardware-id"]


def test_doctor_names_the_resource_manager_and_both_eks(booted):
    rc, report = booted[1]["doctor"]
    tpm = [check for check in json.loads(report)["checks"] if check["name"] == "tpm"][0]
    assert tpm["ok"] is True and tpm["detail"].startswith("device:/dev/tpmrm0: IBM, firmware 0x"), tpm
    assert "EK certificates: L-1, H-3" in tpm["detail"]


def test_this_device_only_through_tpmrm0_opens_what_the_socket_sealed_and_seals_anew(booted):
    """The binding key is the TPM's, whichever path reaches it: the guest opens through
    /dev/tpmrm0 the record the host sealed through swtpm's socket, and seals and opens its own."""
    host, steps = booted
    assert steps["sealed-by-host"] == (0, host["sealed"])
    rc, sealed = steps["sealed-here"]
    assert rc == 0 and sealed != host["sealed"], (rc, sealed)
    assert steps["sealed-again"] == (0, sealed)


def test_the_raw_device_is_refused_by_any_name(booted):
    steps = booted[1]
    rc, words = steps["raw-by-name"]
    assert rc == 11 and "only a TPM resource manager (/dev/tpmrm0) is used" in words, (rc, words)
    rc, words = steps["raw-by-link"]
    assert rc == 11 and "/tmp/tpmrm0 is the raw TPM device (class tpm), which was not opened" in words, (rc, words)


def test_a_user_outside_the_tss_group_gets_permission_and_the_way_in(booted):
    host, steps = booted
    rc, words = steps["outsider"]
    assert rc == 19, (rc, words)  # PERMISSION
    assert "cannot open /dev/tpmrm0: Permission denied" in words and "usermod -aG tss USER" in words
    assert steps["member"] == (0, host["hardware-id"]), "in the tss group, the same user gets the same ID"


def test_eight_processes_at_once_through_the_resource_manager(booted):
    """Each makes two primaries and a TPM2_Certify at the same time: the kernel's resource manager
    gives each its own handles, where swtpm's socket serves one connection at a time. The eight
    take 3.3-3.6 s together in an idle guest (qemu emulates the CPU and each TIS register access):
    under the default 5 s deadline a loaded CI machine had all eight time out at once, since the
    resource manager interleaves them. What the deadline does under a busy TPM is the next test's
    subject, so here each process has 60 s."""
    rc, counts = booted[1]["parallel"]  # 1 for each process's evidence, or 0 and its last words
    assert counts.split() == ["1"] * PARALLEL, counts


def test_a_tpm_busy_with_other_programs_costs_the_deadline_not_their_commands(booted):
    """Issue 34, case 1, on /dev/tpmrm0: six other processes keep the TPM busy, and each of our
    calls, with a 1 ms deadline, answers or is TIMED_OUT by then + 0.5 s, its connection closed
    behind it. Some do time out: the deadline came inside conversations (else this would show
    nothing). (With 5 ms, one run in two had every conversation done in time: the busy TPM's
    commands are short, and a conversation takes a few ms in the guest.) The libraries are loaded
    by a first call with time to spare (first_ms): loading is not a conversation (a whole-suite run
    once had one call of 0.59 s over the bound; the first, which loaded them, is the likeliest)."""
    rc, out = booted[1]["loaded"]
    assert rc == 0, out
    figures = {key: int(value) for key, value in (item.split("=") for item in out.split("\n")[-1].split())}
    assert figures["other"] == 0 and figures["ok"] + figures["timed_out"] == LOADED_CALLS, out
    assert figures["timed_out"] > 0, f"no call reached its deadline: {out}"
    assert figures["slowest_ms"] < LOADED_DEADLINE_MS + 500, out


def test_children_forked_during_tpm_calls_neither_hang_nor_block_the_parent(booted):
    """Through /dev/tpmrm0: a child keeps the copy of a descriptor it inherited only until the
    library's child handler closes it; no parent call outlives its deadline by more than 0.5 s,
    and each child's own call answers the parent's ID (issue 35, case 6)."""
    rc, out = booted[1]["fork"]
    assert rc == 0, out
    fields = dict(item.split("=") for item in out.split("\n")[-1].split())
    figures = {key: int(value) for key, value in fields.items()}
    assert figures["errors"] == 0 and figures["calls"] > 5, out
    assert figures["held"] == 0, f"children began with the parent's /dev/tpmrm0 connection: {out}"
    assert figures["slowest_ms"] < FORK_DEADLINE_MS + 500, out
    assert figures["children"] > 10 and figures["agreed"] == figures["children"], out
    assert figures["born_inside"] >= figures["children"] // 2, out
