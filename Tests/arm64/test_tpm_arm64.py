"""DeviceID's arm64 build on a TPM through the kernel's resource manager: Debian's arm64 kernel
boots under qemu-system-aarch64 (-M virt, a tpm-tis-device backed by swtpm:
scripts/with-qemu-tpm --arch arm64) and the arm64 command runs inside with no DEVICEID_TPM_TCTI.
The TPM's state is an swtpm the host (x86_64) spoke to first through its socket, so each answer
of the guest is checked against the host's or verified on the host: the hardware ID, the
enrolment request, the Privacy CA's challenge activated in the guest, the evidence (DeviceID's
verifier), the WebAuthn attestation (python-fido2 and py_webauthn from PyPI, and DeviceID's
verifier) and an assertion of the credential it registered."""
import base64
import hashlib
import json

from deviceid_verifier import Verifier, WebAuthnVerifier
from qemu_guest import STEP, run_guest
from test_deviceid_device import deviceid, enrol, hardware_id
from test_webauthn import ORIGIN, b64url, client_data, judge, judges, registration  # noqa: F401 (judges: a fixture)

import pytest

APP = "com.example.arm64-tpm"

# Each step prints NAME=RC:BASE64(OUTPUT) on a line of its own (busybox sh; the console is the
# only way out of the guest).
GUEST = STEP + f"""
APP={APP}
step machine uname -m
step hardware-id deviceid hardware-id $APP
step enrol deviceid attest enrol $APP
step activate sh -c "deviceid attest activate $APP < /in/challenge.json"
step certify deviceid attest certify $APP --nonce "$(cat /in/nonce)"
step webauthn deviceid attest webauthn $APP --client-data-hash "$(cat /in/create-hash)" --ak-certificate /in/ak.json
step assert deviceid assert $APP --client-data-hash "$(cat /in/get-hash)"
step doctor deviceid --json doctor
"""


@pytest.fixture(scope="module")
def booted(machines, make_ca, arm64_prefix, tmp_path_factory):
    """(host's answers and verifiers, the guest's steps by name as (exit status, output)): the host
    enrols through swtpm's socket (its AK certificate is the guest's: the same TPM, the same AK),
    hands the same TPM state to qemu, and the guest runs GUEST."""
    machine = machines("arm64")
    host = {"hardware-id": hardware_id(machine, APP)}
    request = deviceid(machine, "attest", "enrol", APP)
    assert request.returncode == 0, request.stderr
    host["enrol"] = json.loads(request.stdout)
    host["ca"] = ca = make_ca("deviceid arm64 CA")
    host["certificate"] = certificate = enrol(machine, APP, ca)
    host["verifier"] = verifier = Verifier([ca.certificate])
    host["nonce"] = nonce = verifier.new_nonce()
    host["webauthn"] = webauthn = WebAuthnVerifier([ca.certificate], origins=[ORIGIN])
    host["create"] = create = client_data(webauthn.new_challenge())
    host["get"] = get = json.dumps({"type": "webauthn.get", "challenge": b64url(webauthn.new_challenge()),
                                    "origin": ORIGIN}).encode()
    work = tmp_path_factory.mktemp("qemu-arm64")
    inputs = work / "in"
    inputs.mkdir()
    (inputs / "challenge.json").write_text(ca.challenge(request.stdout))
    (inputs / "nonce").write_text(base64.b64encode(nonce).decode())
    (inputs / "ak.json").write_text(certificate)
    (inputs / "create-hash").write_text(b64url(hashlib.sha256(create).digest()))
    (inputs / "get-hash").write_text(b64url(hashlib.sha256(get).digest()))
    (work / "guest.sh").write_text(GUEST)
    steps = run_guest(machine, arm64_prefix, work / "guest.sh", inputs, arch="arm64", timeout=600)
    assert "doctor" in steps, f"the guest did not reach its last step: {steps}"
    return host, steps


def test_the_guest_is_arm64_and_its_tpm_the_kernels_resource_manager(booted):
    host, steps = booted
    assert steps["machine"] == (0, "aarch64")
    rc, report = steps["doctor"]
    tpm = [check for check in json.loads(report)["checks"] if check["name"] == "tpm"][0]
    assert tpm["ok"] is True and tpm["detail"].startswith("device:/dev/tpmrm0: IBM, firmware 0x"), tpm


def test_the_hardware_id_on_arm64_is_the_one_x86_64_reads_through_swtpms_socket(booted):
    host, steps = booted
    assert steps["hardware-id"] == (0, host["hardware-id"])


def test_enrolment_activation_and_evidence_on_arm64_verify_on_x86_64(booted):
    host, steps = booted
    rc, enrol_request = steps["enrol"]
    assert rc == 0 and json.loads(enrol_request) == host["enrol"]
    rc, response = steps["activate"]
    assert rc == 0, response
    assert json.loads(host["ca"].finish(response))["certificate"]
    rc, evidence = steps["certify"]
    assert rc == 0, evidence
    certificate = json.loads(host["certificate"])["certificate"]
    attestation = host["verifier"].verify(json.dumps({**json.loads(evidence), "ak_certificate": certificate}),
                                          host["nonce"], app_id=APP)
    assert attestation.hardware_id == host["hardware-id"]


@pytest.fixture(scope="module")
def credential(booted):
    """The credential DeviceID's verifier registered from the guest's attestation (its challenge spent)."""
    host, steps = booted
    rc, made = steps["webauthn"]
    assert rc == 0, made
    return host["webauthn"].register(made, host["create"], app_id=APP)


def test_the_webauthn_attestation_made_on_arm64_registers_with_fido2_py_webauthn_and_deviceid(booted, judges, credential):
    host, steps = booted
    rc, made = steps["webauthn"]
    assert rc == 0, made
    message = json.loads(made)
    challenge = json.loads(host["create"])["challenge"]
    raw_challenge = base64.urlsafe_b64decode(challenge + "=" * (-len(challenge) % 4))
    encoded = message["attestation_object"]
    attestation_object = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    verdicts = judge(judges, registration(attestation_object, host["create"], raw_challenge, host["ca"], rp_id=APP))
    for name in ("fido2", "py_webauthn"):
        assert verdicts[name]["ok"], (name, verdicts[name])
        assert verdicts[name]["credential_id"] == message["credential_id"], name
    assert b64url(credential.credential_id) == message["credential_id"]


def test_an_assertion_made_on_arm64_verifies_on_x86_64(booted, credential):
    host, steps = booted
    rc, made = steps["assert"]
    assert rc == 0, made
    followed = host["webauthn"].verify_assertion(made, host["get"], credential)
    assert followed.counter > credential.counter
