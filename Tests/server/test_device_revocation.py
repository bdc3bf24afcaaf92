"""Issue 51, cases 1 and 8: a revocation cuts the device (the TPM) off for the app until an
operator lifts it, and limits and risk count per TPM, not per EK certificate. Through the
service on both stores, with `deviceid` itself enrolling on swtpm (which holds an RSA and an ECC
EK, each with its certificate): it answers the secret the CA sealed to each EK it offered, so the
CA learns the two EKs are one TPM (docs/SERVER-STATE.md, invariants 6 and 11)."""
import base64
import json
import os

import pytest

from test_deviceid_device import deviceid, evidence
from test_service import fleet, nonce_of, ok, rejected, run_operator, verification  # noqa: F401  (fleet: a fixture)
from test_webauthn_service import assertion, registration

APP, OTHER_APP = "com.example.revoked", "com.example.untouched"
SEALED = "credential_blob_"


def sealed_kinds(challenge: str) -> list:
    """The EK kinds other than the chosen one that a challenge sealed a secret to."""
    return [key[len(SEALED):] for key in json.loads(challenge) if key.startswith(SEALED)]


def only_other_ek(request: str) -> str:
    """The enrolment request as a client offering one EK would send it: only the first further EK
    the request offers (ek_certificate_<kind>), as its only one."""
    message = json.loads(request)
    others = sorted(key for key in message if key.startswith("ek_certificate_"))
    assert others, message
    kind = others[0][len("ek_certificate_"):]
    message["ek_kind"], message["ek_certificate"] = kind, message[others[0]]
    for key in others:
        del message[key]
    return json.dumps(message)


def request_of(machine, app_id):
    made = deviceid(machine, "attest", "enrol", app_id)
    assert made.returncode == 0, made.stderr
    return made.stdout


def answer_of(machine, app_id, challenge):
    made = deviceid(machine, "attest", "activate", app_id, input=challenge)
    assert made.returncode == 0, made.stderr
    return made.stdout


def enrol(machine, service, app_id=APP, edit=lambda request: request):
    """The AK certificate message of an enrolment of `app_id` whose request passed through `edit`."""
    challenge = ok(service.post("/v1/enrolment/challenge", edit(request_of(machine, app_id))))
    return ok(service.post("/v1/enrolment/finish", answer_of(machine, app_id, challenge)))


def evidence_answer(machine, service, certificate, tmp_path, app_id=APP):
    """The service's answer to evidence of `app_id` carrying the AK certificate message `certificate`."""
    nonce = nonce_of(service)
    return service.post("/v1/attestation/verify",
                        verification(evidence(machine, app_id, nonce, certificate, tmp_path), nonce, app_id))


def serial_of(certificate):
    from cryptography import x509
    return format(x509.load_der_x509_certificate(base64.b64decode(json.loads(certificate)["certificate"])).serial_number,
                  "x")


@pytest.fixture
def tpm(machines):
    machine = machines(f"revoked-{os.urandom(3).hex()}")
    yield machine
    machine.tpm.stop()


def test_the_device_asks_to_prove_both_eks_and_answers_both(tpm, fleet):  # noqa: F811
    service, _ = fleet
    request = json.loads(request_of(tpm, APP))
    offered = [key[len("ek_certificate_"):] for key in request if key.startswith("ek_certificate_")]
    assert offered, request  # swtpm: an RSA and an ECC EK certificate
    challenge = ok(service.post("/v1/enrolment/challenge", json.dumps(request)))
    assert sealed_kinds(challenge) == offered
    response = json.loads(answer_of(tpm, APP, challenge))
    assert sorted(key for key in response if key.startswith("credential_")) == [f"credential_{k}" for k in offered]


def test_a_revoked_device_stays_out_until_lifted(tpm, fleet, database_url, tmp_path):  # noqa: F811
    a, b = fleet
    first = enrol(tpm, a)  # two certificates before the revocation: the second is not revoked by name
    second = enrol(tpm, b)
    pending = ok(a.post("/v1/enrolment/challenge", request_of(tpm, APP)))  # a challenge made before, too
    untouched = enrol(tpm, a, OTHER_APP)
    credential = json.loads(ok(a.post("/v1/webauthn/register", registration(tpm, b, APP, second, tmp_path))))
    ok(b.post("/v1/assertion/verify", assertion(tpm, a, APP)))

    assert run_operator("revoke", "--database", database_url, "--serial", serial_of(first), "--reason",
                        "fraud") == f"revoked {serial_of(first)}\n"
    # the same TPM re-enrols: with the same EK, with its other EK alone, or with a challenge it held
    for request in (request_of(tpm, APP), only_other_ek(request_of(tpm, APP))):
        body, _ = rejected(b.post("/v1/enrolment/challenge", request), 403, "revoked")
        assert "fraud" in body["message"] and "lifts" in body["message"]
    rejected(b.post("/v1/enrolment/finish", answer_of(tpm, APP, pending)), 403, "revoked")
    # an older certificate of the device: evidence, registration and the credential's assertions
    rejected(evidence_answer(tpm, a, second, tmp_path), 403, "revoked")
    rejected(a.post("/v1/webauthn/register", registration(tpm, b, APP, second, tmp_path)), 403, "revoked")
    rejected(b.post("/v1/assertion/verify", assertion(tpm, a, APP)), 403, "revoked")
    assert credential["ak_certificate_serial"] == serial_of(second)
    # another app of the same TPM is not touched
    assert ok(evidence_answer(tpm, b, untouched, tmp_path, OTHER_APP))

    # a second revoke changes nothing, and says so; lift lets the device enrol again
    again = run_operator_failing("revoke", "--database", database_url, "--serial", serial_of(second))
    assert "already revoked" in again
    assert run_operator("lift", "--database", database_url, "--serial", serial_of(second)) \
        == f"lifted {serial_of(second)}\n"
    assert "is not revoked" in run_operator_failing("lift", "--database", database_url, "--serial", serial_of(first))
    rejected(evidence_answer(tpm, a, second, tmp_path), 403, "revoked")  # its certificates stay revoked
    fresh = enrol(tpm, a)
    assert json.loads(ok(evidence_answer(tpm, b, fresh, tmp_path)))["risk"] == 3  # first, second, fresh
    ok(a.post("/v1/webauthn/register", registration(tpm, b, APP, fresh, tmp_path)))
    ok(b.post("/v1/assertion/verify", assertion(tpm, a, APP)))


def run_operator_failing(*argv) -> str:
    from verifier_command import cli
    result = cli(*argv)
    assert result.returncode == 2, result
    return result.stderr


def test_limits_and_risk_count_the_tpm_not_the_ek_certificate(tpm, fleet, database_url, tmp_path):  # noqa: F811
    a, b = fleet
    run_operator("set-limit", "--database", database_url, "--enrolments", "3", "--window", "3600")
    try:
        certificates = [enrol(tpm, a if i % 2 else b) for i in range(3)]
        body, headers = rejected(a.post("/v1/enrolment/challenge", request_of(tpm, APP)), 429, "rate-limited")
        # the other EK alone: the same TPM, at its limit (1.0 gave 3 more)
        rejected(b.post("/v1/enrolment/challenge", only_other_ek(request_of(tpm, APP))), 429, "rate-limited")
        assert json.loads(ok(evidence_answer(tpm, a, certificates[-1], tmp_path)))["risk"] == 3
    finally:
        run_operator("set-limit", "--database", database_url, "--enrolments", "5", "--window", "86400")


def test_an_ek_not_proven_is_not_linked(tpm, fleet, tmp_path):  # noqa: F811
    """Naming an EK proves nothing: a response that leaves out (an older client) or gets wrong the
    second secret links nothing, and the enrolment itself goes on, as it did before."""
    a, b = fleet
    for edit in (lambda r: {k: v for k, v in r.items() if not k.startswith("credential_")},
                 lambda r: {**r, **{k: base64.b64encode(bytes(32)).decode() for k in r if k.startswith("credential_")}}):
        challenge = ok(a.post("/v1/enrolment/challenge", request_of(tpm, APP)))
        ok(b.post("/v1/enrolment/finish", json.dumps(edit(json.loads(answer_of(tpm, APP, challenge))))))
    alone = enrol(tpm, a, edit=only_other_ek)
    assert json.loads(ok(evidence_answer(tpm, b, alone, tmp_path)))["risk"] == 1  # a device of its own
