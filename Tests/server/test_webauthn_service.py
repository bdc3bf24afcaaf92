"""App Attest for Linux through the service, as a fleet runs it: a device (swtpm, the `deviceid`
command) enrols, registers its credential and asserts over HTTP, each step at another instance
of `serve` on one database (PostgreSQL: two instances; SQLite: one of four workers). The
counter is the database's: of racing assertions with one counter exactly one is accepted at any
worker, and a clone of the TPM is caught and its credential marked for good."""
import base64
import concurrent.futures
import hashlib
import json
import os
import signal

import jsonschema
import pytest

from test_deviceid_device import deviceid
from test_service import fleet, ok, rejected, run_operator  # noqa: F401  (fleet: a fixture)
from test_service_inputs import validator
from test_webauthn import clone_machine

APP, UNREGISTERED = "com.example.fleet-attest", "com.example.fleet-unregistered"
ORIGIN = "https://fleet.example"


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def enrol(machine, at_challenge, at_finish, app_id):
    """The AK certificate message of `app_id`, from `deviceid attest enrol/activate` over HTTP."""
    request = deviceid(machine, "attest", "enrol", app_id)
    assert request.returncode == 0, request.stderr
    challenge = ok(at_challenge.post("/v1/enrolment/challenge", request.stdout))
    response = deviceid(machine, "attest", "activate", app_id, input=challenge)
    assert response.returncode == 0, response.stderr
    return ok(at_finish.post("/v1/enrolment/finish", response.stdout))


def challenge_of(service):
    message = json.loads(ok(service.post("/v1/webauthn/challenge")))
    validator("webauthn-challenge").validate(message)
    return message["challenge"]


def client_data(kind, challenge):
    return json.dumps({"type": kind, "challenge": challenge, "origin": ORIGIN}).encode()


def registration(machine, service, app_id, certificate, tmp_path):
    """(the registration request for `app_id`, on a challenge of `service`)."""
    data = client_data("webauthn.create", challenge_of(service))
    path = tmp_path / f"ak-{app_id}.json"
    path.write_text(certificate)
    made = deviceid(machine, "attest", "webauthn", app_id, "--client-data-hash", b64url(hashlib.sha256(data).digest()),
                    "--ak-certificate", str(path))
    assert made.returncode == 0, made.stderr
    return {"v": 1, "type": "deviceid.webauthn-registration", "attestation": json.loads(made.stdout),
            "client_data_json": b64url(data), "app_id": app_id}


def assertion(machine, service, app_id=APP):
    """An assertion request for `app_id`, on a challenge of `service`."""
    return assertion_on(machine, challenge_of(service), app_id)


def assertion_on(machine, challenge, app_id=APP):
    """An assertion request for `app_id` whose client data carries `challenge` (base64url)."""
    data = client_data("webauthn.get", challenge)
    made = deviceid(machine, "assert", app_id, "--client-data-hash", b64url(hashlib.sha256(data).digest()))
    assert made.returncode == 0, made.stderr
    return {"v": 1, "type": "deviceid.assertion-request", "assertion": json.loads(made.stdout),
            "client_data_json": b64url(data), "app_id": app_id}


@pytest.fixture
def registered(machines, fleet, tmp_path):  # noqa: F811
    """A new machine whose APP credential is registered: (machine, credential answer, AK certificate)."""
    machine = machines(f"fleet-attest-{os.urandom(3).hex()}")
    a, b = fleet
    certificate = enrol(machine, a, b, APP)
    credential = json.loads(ok(a.post("/v1/webauthn/register", registration(machine, b, APP, certificate, tmp_path))))
    yield machine, credential, certificate
    machine.tpm.stop()


def test_register_at_one_instance_assert_at_the_other_each_once(registered, fleet):  # noqa: F811
    machine, credential, _ = registered
    a, b = fleet
    validator("webauthn-credential").validate(credential)
    assert (credential["app_id"], credential["counter"]) == (APP, 0) and "counter_failed" not in credential
    first = assertion(machine, a)
    for name, message in (("assertion-request", first), ("webauthn-assertion", first["assertion"])):
        validator(name).validate(message)
    answer = json.loads(ok(b.post("/v1/assertion/verify", first)))
    validator("assertion-verification").validate(answer)
    assert answer == {"v": 1, "type": "deviceid.assertion-verification", "app_id": APP,
                      "credential_id": credential["credential_id"], "counter": first["assertion"]["counter"],
                      "ak_certificate_serial": credential["ak_certificate_serial"]}
    assert first["assertion"]["counter"] >= 1
    rejected(a.post("/v1/assertion/verify", first), 403, "nonce-replayed")  # its challenge is used up
    second = assertion(machine, b)
    assert json.loads(ok(a.post("/v1/assertion/verify", second)))["counter"] == first["assertion"]["counter"] + 1
    with pytest.raises(jsonschema.ValidationError):  # the schema does say no
        validator("assertion-verification").validate({**answer, "counter": -1})


def test_a_challenge_is_spent_by_its_own_purpose_and_app_and_never_by_junk(registered, fleet):  # noqa: F811
    """Issue 51, case 10: whoever saw a challenge could spend it with junk, and the device's
    genuine assertion was then nonce-replayed; a /v1/nonce nonce worked as a challenge, and a
    challenge was tied to no app. Now junk spends nothing, and a challenge serves WebAuthn only,
    and only the app it was issued for when the request named one."""
    machine, _, _ = registered
    a, b = fleet
    request = assertion(machine, a)
    junk = {**request, "assertion": {**request["assertion"], "signature": b64url(bytes(70))}}
    rejected(b.post("/v1/assertion/verify", junk), 403, "signature")
    ok(b.post("/v1/assertion/verify", request))

    nonce = json.loads(ok(a.post("/v1/nonce")))["nonce"]
    rejected(b.post("/v1/assertion/verify", assertion_on(machine, b64url(base64.b64decode(nonce)))), 403,
             "nonce-unknown")
    theirs = json.loads(ok(a.post("/v1/webauthn/challenge", {"app_id": UNREGISTERED})))
    validator("webauthn-challenge").validate(theirs)
    assert theirs["app_id"] == UNREGISTERED
    rejected(b.post("/v1/assertion/verify", assertion_on(machine, theirs["challenge"])), 403, "nonce-unknown")
    ours = json.loads(ok(a.post("/v1/webauthn/challenge", {"app_id": APP})))["challenge"]
    ok(b.post("/v1/assertion/verify", assertion_on(machine, ours)))


def test_24_concurrent_submissions_of_one_assertion_accept_exactly_one(registered, fleet):  # noqa: F811
    machine, _, _ = registered
    a, b = fleet
    request = assertion(machine, a)
    with concurrent.futures.ThreadPoolExecutor(24) as pool:
        answers = list(pool.map(lambda i: (a, b)[i % 2].post("/v1/assertion/verify", request), range(24)))
    statuses = sorted(status for status, _, _ in answers)
    assert statuses == [200] + [403] * 23, [body for _, _, body in answers]
    assert {json.loads(body)["rejected"] for status, _, body in answers if status == 403} == {"nonce-replayed"}


def test_a_clone_racing_the_original_with_one_counter_one_wins_and_the_mark_stays(registered, fleet,  # noqa: F811
                                                                                   tmp_path):
    machine, credential, _ = registered
    a, b = fleet
    ok(a.post("/v1/assertion/verify", assertion(machine, b)))
    clone = clone_machine(machine, tmp_path)
    try:
        ours, theirs = assertion(machine, a), assertion(clone, b)
        assert ours["assertion"]["counter"] == theirs["assertion"]["counter"], "the clone counts on from the same value"
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(lambda pair: pair[0].post("/v1/assertion/verify", pair[1]),
                                    [(a, ours), (b, theirs)]))
        assert sorted(status for status, _, _ in answers) == [200, 403], answers
        loser = next(json.loads(body) for status, _, body in answers if status == 403)
        assert loser["rejected"] == "counter", loser
        # the winner's next assertion passes, and says from now on that a clone may exist
        winner = machine if answers[0][0] == 200 else clone
        later = json.loads(ok(b.post("/v1/assertion/verify", assertion(winner, a))))
        assert later["counter"] == ours["assertion"]["counter"] + 1 and later["counter_failed"].endswith("Z"), later
        # registering again (as the clone could) keeps the mark and the counter
        again = json.loads(ok(b.post("/v1/webauthn/register",
                                     registration(clone, a, APP, registered[2], tmp_path))))
        assert (again["counter"], again["counter_failed"]) == (later["counter"], later["counter_failed"])
        assert again["credential_id"] == credential["credential_id"]
    finally:
        os.kill(clone.tpm.pid, signal.SIGTERM)


def test_unregistered_revoked_and_hostile_assertions_are_4xx_with_a_reason(registered, fleet, database_url):  # noqa: F811
    machine, credential, certificate = registered
    a, b = fleet
    enrol(machine, a, b, UNREGISTERED)
    rejected(a.post("/v1/assertion/verify", assertion(machine, b, UNREGISTERED)), 403, "credential-unknown")
    request = assertion(machine, a)
    rejected(b.post("/v1/assertion/verify", {**request, "app_id": UNREGISTERED}), 403, "app-id-mismatch")
    for body in ({**request, "assertion": "text"}, {**request, "client_data_json": "not base64url!"},
                 {**request, "type": "deviceid.webauthn-registration"},
                 {**request, "assertion": {**request["assertion"], "signature": b64url(bytes(70))}}):
        status, _, answer = b.post("/v1/assertion/verify", body)
        assert 400 <= status < 500 and json.loads(answer)["rejected"], (status, answer)
    serial = credential["ak_certificate_serial"]
    assert run_operator("revoke", "--database", database_url, "--serial", serial, "--reason", "key-compromise") \
        == f"revoked {serial}\n"
    body, _ = rejected(a.post("/v1/assertion/verify", assertion(machine, b)), 403, "revoked")
    assert "key-compromise" in body["message"]
