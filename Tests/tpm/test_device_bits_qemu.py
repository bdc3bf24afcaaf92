"""The tpm2_clear row of what survives what (issue 55) where DeviceID takes its default path, the
kernel's resource manager /dev/tpmrm0: Debian's kernel under qemu (scripts/with-qemu-tpm) on the
state of a swtpm whose device a tenant wrote bits of. The host enrols and attests through the
swtpm's socket, the tenant writes its bits, the TPM is cleared (tpm2_clear: a new storage seed,
every hardware ID and AK new); then in the guest, through /dev/tpmrm0, the device answers the
CA's challenge for its new AK and attests with it: a new hardware ID, the same bits."""
import base64
import json
import os
import subprocess
from pathlib import Path

from qemu_guest import STEP, run_guest
from test_deviceid_device import cli_path, deviceid

APP = "com.example.qemu-bits"
WRITTEN = (True, False, True)

GUEST = STEP + f"""
step hardware-id deviceid hardware-id {APP}
step activate sh -c "deviceid attest activate {APP} < /in/challenge.json"
step certify deviceid attest certify {APP} --nonce "$(cat /in/nonce)"
"""


def enrol_on_host(machine, ca):
    request = deviceid(machine, "attest", "enrol", APP)
    assert request.returncode == 0, request.stderr
    response = deviceid(machine, "attest", "activate", APP, input=ca.challenge(request.stdout))
    assert response.returncode == 0, response.stderr
    return ca.finish(response.stdout)


def test_the_bits_survive_tpm2_clear_through_tpmrm0(machines, make_ca, tmp_path):
    from deviceid_verifier import Verifier
    machine = machines("qemu-bits")
    ca = make_ca("deviceid device bits CA")
    verifier = Verifier([ca.certificate], store=ca.store)
    certificate = tmp_path / "ak.json"
    certificate.write_text(enrol_on_host(machine, ca))
    nonce = verifier.new_nonce(APP)
    evidence = deviceid(machine, "attest", "certify", APP, "--nonce", base64.b64encode(nonce).decode(),
                        "--ak-certificate", str(certificate))
    assert evidence.returncode == 0, evidence.stderr
    before = verifier.verify(evidence.stdout, nonce, app_id=APP)
    check = ca.device_check
    check.write("tenant", check.seen("tenant", before.ek_pseudonym, assertion=False).token, WRITTEN)

    cleared = subprocess.run(["tpm2_clear"], env=dict(os.environ, TPM2TOOLS_TCTI=machine.tpm.tcti),
                             capture_output=True, text=True, timeout=60)
    assert cleared.returncode == 0, cleared.stderr
    # The host's pin of the old salting key (docs/STATE.md, "TPM pins") is forgotten, as its user
    # would after a clear; the guest, another machine ID and address, pins its own.
    assert deviceid(machine, "tpm-pin", "forget").returncode == 0
    request = deviceid(machine, "attest", "enrol", APP)  # the new AK's request: the guest's is the same
    assert request.returncode == 0, request.stderr
    work = tmp_path / "qemu"
    (work / "in").mkdir(parents=True)
    (work / "in" / "challenge.json").write_text(ca.challenge(request.stdout))
    nonce = verifier.new_nonce(APP)
    (work / "in" / "nonce").write_text(base64.b64encode(nonce).decode())
    (work / "guest.sh").write_text(GUEST)
    steps = run_guest(machine, Path(cli_path()).resolve().parents[1], work / "guest.sh", work / "in")
    assert {name: rc for name, (rc, _) in steps.items()} == {"hardware-id": 0, "activate": 0, "certify": 0}, steps

    renewed = json.loads(ca.finish(steps["activate"][1]))["certificate"]
    after = verifier.verify(json.dumps({**json.loads(steps["certify"][1]), "ak_certificate": renewed}), nonce,
                            app_id=APP)
    assert after.hardware_id == steps["hardware-id"][1] != before.hardware_id
    assert after.ak_name != before.ak_name
    answer = check.seen("tenant", after.ek_pseudonym, assertion=False)
    assert (answer.bits, answer.months[1]) == (WRITTEN, None)
