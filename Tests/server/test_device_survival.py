"""What survives what (issue 55): a tenant's bits of a device, written once, read back through
every reset a device can go through — its app data and file store wiped, `deviceid reset`, a new
enrolment, `tpm2_clear` (every hardware ID changes) — and for a second app id of the same tenant,
while another tenant sees nothing and another TPM, or this one after `tpm2_changeeps`, is a new
device. The device is a swtpm driven by the installed `deviceid` command, over HTTP to `serve`."""
import base64
import hashlib
import json
import os
import subprocess

from test_deviceid_device import deviceid
from test_service import ok, rejected
from test_webauthn_service import assertion_on, b64url, client_data

APP, SECOND_APP, OTHER_TENANTS_APP = "com.example.survive", "com.example.survive-second", "com.example.elsewhere"
WRITTEN = [True, False, True]


def operator(*argv):
    from verifier_command import cli
    made = cli(*argv)
    assert made.returncode == 0, made.stderr
    return json.loads(made.stdout)


class Tenant:
    """A tenant's app server: its key, and the AK certificates its devices enrolled."""

    def __init__(self, service, key, tmp_path):
        self.service, self.key, self.tmp_path = service, key, tmp_path
        self.headers = {"Authorization": f"Bearer {key}"}

    def post(self, path, body):
        data = body if isinstance(body, (bytes, str)) else json.dumps(body)
        return self.service.request("POST", path, data.encode() if isinstance(data, str) else data,
                                    headers=self.headers)

    def enrol(self, machine, app_id):
        request = deviceid(machine, "attest", "enrol", app_id)
        assert request.returncode == 0, request.stderr
        challenge = ok(self.service.post("/v1/enrolment/challenge", request.stdout))  # the device's, no key
        response = deviceid(machine, "attest", "activate", app_id, input=challenge)
        assert response.returncode == 0, response.stderr
        certificate = ok(self.service.post("/v1/enrolment/finish", response.stdout))
        path = self.tmp_path / f"ak-{machine.tpm.dir.name}-{app_id}.json"
        path.write_text(certificate)
        return path

    def verify(self, machine, app_id, certificate):
        """The verification of `machine`'s evidence for `app_id`, as this tenant's server gets it."""
        nonce = json.loads(ok(self.post("/v1/nonce", {"app_id": app_id})))["nonce"]
        evidence = deviceid(machine, "attest", "certify", app_id, "--nonce", nonce, "--ak-certificate", str(certificate))
        assert evidence.returncode == 0, evidence.stderr
        return json.loads(ok(self.post("/v1/attestation/verify", {
            "v": 1, "type": "deviceid.verification-request", "evidence": json.loads(evidence.stdout), "nonce": nonce,
            "app_id": app_id})))

    def bits(self, machine, app_id, certificate):
        device = self.verify(machine, app_id, certificate)["device"]
        return device["bits"], device["months"]


def store_id(machine, store, *args):
    done = deviceid(machine, "--backend", "file", "--store-dir", str(store), *args)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def tpm2(machine, *argv):
    done = subprocess.run(argv, env=dict(os.environ, TPM2TOOLS_TCTI=machine.tpm.tcti), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr


def test_the_bits_survive_every_reset_but_a_new_endorsement_seed(machines, services, tmp_path):
    machine = machines(f"survive-{os.urandom(3).hex()}")
    database = f"sqlite:///{tmp_path}/survive.sqlite3"
    owner_key = operator("tenant", "add", "owner", "--app", APP, "--app", SECOND_APP, "--database", database)["api_key"]
    other_key = operator("tenant", "add", "other", "--app", OTHER_TENANTS_APP, "--database", database)["api_key"]
    # started once the tenants are there: each worker reads them with its first request
    service = services(database, 1, workers=2)[0]
    owner, other = Tenant(service, owner_key, tmp_path), Tenant(service, other_key, tmp_path)
    certificate = owner.enrol(machine, APP)
    first = owner.verify(machine, APP, certificate)
    assert first["device"]["bits"] == [False, False, False]
    written = json.loads(ok(owner.post("/v1/device/bits", {"token": first["device"]["token"], "bits": WRITTEN})))
    kept = (WRITTEN, written["months"])
    assert written["bits"] == WRITTEN and written["months"][1] is None

    # an assertion of the device reads them too (App Attest for Linux, the tenant's key sent)
    registered = client_data("webauthn.create", json.loads(ok(owner.post("/v1/webauthn/challenge",
                                                                         {"app_id": APP})))["challenge"])
    attestation = deviceid(machine, "attest", "webauthn", APP, "--client-data-hash",
                           b64url(hashlib.sha256(registered).digest()), "--ak-certificate", str(certificate))
    assert attestation.returncode == 0, attestation.stderr
    ok(owner.post("/v1/webauthn/register", {"v": 1, "type": "deviceid.webauthn-registration",
                                            "attestation": json.loads(attestation.stdout),
                                            "client_data_json": b64url(registered), "app_id": APP}))
    challenge = json.loads(ok(owner.post("/v1/webauthn/challenge", {"app_id": APP})))["challenge"]
    asserted = json.loads(ok(owner.post("/v1/assertion/verify", assertion_on(machine, challenge, APP))))
    assert (asserted["device"]["bits"], asserted["device"]["activity"]) == (WRITTEN, "LEVEL_1")
    challenge = json.loads(ok(owner.post("/v1/webauthn/challenge", {"app_id": APP})))["challenge"]
    as_device = json.loads(ok(service.post("/v1/assertion/verify", assertion_on(machine, challenge, APP))))
    assert "device" not in as_device  # the device posting its own assertion never sees its bits

    # app data and the file store wiped: the app's stable ID is new, the device's bits are not
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    before = store_id(machine, store, "get", APP)
    subprocess.run(["rm", "-rf", str(store)], check=True)
    store.mkdir(mode=0o700)
    assert store_id(machine, store, "get", APP) != before
    assert owner.bits(machine, APP, certificate) == kept

    # deviceid reset
    before = store_id(machine, store, "get", APP)
    store_id(machine, store, "reset", APP)
    assert store_id(machine, store, "get", APP) != before
    assert owner.bits(machine, APP, certificate) == kept

    # a new enrolment (as after an OS reinstall): a new AK certificate, the same device
    renewed = owner.enrol(machine, APP)
    answer = owner.verify(machine, APP, renewed)
    assert answer["ak_certificate_serial"] != first["ak_certificate_serial"] and answer["risk"] == 2
    assert (answer["device"]["bits"], answer["device"]["months"]) == kept

    # tpm2_clear: a new storage seed, so a new AK and a new hardware ID; the endorsement seed stays
    hardware_id = deviceid(machine, "hardware-id", APP).stdout.strip()
    tpm2(machine, "tpm2_clear")
    # refused until this machine's pin of the old salting key is forgotten (docs/STATE.md, "TPM pins")
    assert deviceid(machine, "hardware-id", APP).returncode == 18
    assert deviceid(machine, "tpm-pin", "forget").returncode == 0
    assert deviceid(machine, "hardware-id", APP).stdout.strip() != hardware_id
    cleared = owner.enrol(machine, APP)
    answer = owner.verify(machine, APP, cleared)
    assert answer["hardware_id"] != first["hardware_id"] and answer["ak_name"] != first["ak_name"]
    assert (answer["device"]["bits"], answer["device"]["months"]) == kept

    # a second app id of the same tenant: the bits are the device's
    assert owner.bits(machine, SECOND_APP, owner.enrol(machine, SECOND_APP)) == kept

    # another tenant sees nothing of them, and its own bits are its own
    elsewhere = other.enrol(machine, OTHER_TENANTS_APP)
    theirs = other.verify(machine, OTHER_TENANTS_APP, elsewhere)["device"]
    assert (theirs["bits"], theirs["months"]) == ([False, False, False], [None, None, None])
    ok(other.post("/v1/device/bits", {"token": theirs["token"], "bits": [False, True, False]}))
    assert owner.bits(machine, APP, cleared) == kept
    rejected(owner.post("/v1/device/bits", {"token": theirs["token"], "bits": [True] * 3}), 403, "tenant-mismatch")

    # another TPM: a new device, no bits
    stranger = machines(f"stranger-{os.urandom(3).hex()}")
    try:
        assert owner.bits(stranger, APP, owner.enrol(stranger, APP)) == ([False] * 3, [None] * 3)
    finally:
        stranger.tpm.stop()

    # tpm2_changeeps: a new endorsement seed, so new EKs that no certificate of the TPM names: the
    # device can no longer prove the EK its bits are kept under (and never enrols as it again)
    tpm2(machine, "tpm2_changeeps")
    request = deviceid(machine, "attest", "enrol", APP)  # it offers the certificates NV still holds
    assert request.returncode == 0, request.stderr
    challenge = ok(service.post("/v1/enrolment/challenge", request.stdout))  # sealed to the old EK's key
    response = deviceid(machine, "attest", "activate", APP, input=challenge)
    assert response.returncode != 0 and "ActivateCredential" in response.stderr, response.stdout + response.stderr
    machine.tpm.stop()

