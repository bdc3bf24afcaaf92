"""The service's interface held to its documents and to hostile input, in process (the WSGI
application, no gunicorn): the wire messages a real swtpm device exchanges validate against the
JSON Schemas in docs/schemas (jsonschema, Draft 2020-12); random and mutated bodies never reach
a 5xx or an exception (hypothesis)."""
import base64
import io
import json
import os
import re

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from deviceid_verifier import PrivacyCA, Verifier, open_store
from deviceid_verifier._service import make_app, openapi_document
from deviceid_verifier._service._openapi import SCHEMAS, schema
from machines import localca_files, make_ca_certificate
from cryptography import x509

APP = "com.example.inputs"
PATHS = ("/v1/nonce", "/v1/enrolment/challenge", "/v1/enrolment/finish", "/v1/attestation/verify",
         "/v1/webauthn/challenge", "/v1/webauthn/register", "/v1/assertion/verify")


def call(app, method, path, body=b""):
    captured = {}

    def start_response(status, headers):
        captured["status"], captured["headers"] = int(status.split()[0]), dict(headers)

    environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "CONTENT_LENGTH": str(len(body)),
               "wsgi.input": io.BytesIO(body)}
    data = b"".join(app(environ, start_response))
    return captured["status"], captured["headers"], data


@pytest.fixture(scope="module")
def service(machine_a):
    root, issuer = localca_files()
    anchors = [x509.load_pem_x509_certificate(p.read_bytes()) for p in (root, issuer) if p.exists()]
    key, certificate = make_ca_certificate("deviceid inputs test CA")
    store = open_store("memory:")
    return make_app(PrivacyCA(key, certificate, anchors, store=store), Verifier([certificate], store=store))


def validator(name):
    registry_store = {schema(n)["$id"]: schema(n) for n in SCHEMAS}  # $refs resolve against $id, offline
    resolver = jsonschema.RefResolver(base_uri="", referrer=schema(name), store=registry_store)
    return jsonschema.Draft202012Validator(schema(name), resolver=resolver)


def test_a_nonce_request_may_name_the_app_it_is_for(service):
    """Issue 51, case 10: POST /v1/nonce and /v1/webauthn/challenge take an optional body naming
    the app id the nonce is for; an empty body still asks for one of no app."""
    for path, name in (("/v1/nonce", "nonce"), ("/v1/webauthn/challenge", "webauthn-challenge")):
        for body, app_id in ((b"", None), (b"{}", None), (json.dumps({"app_id": APP}).encode(), APP)):
            status, _, answer = call(service, "POST", path, body)
            assert status == 200, answer
            validator(name).validate(json.loads(answer))
            assert json.loads(answer).get("app_id") == app_id
        for body in (b"[]", b"{", b'{"app_id":5}', b'{"app_id":null}', b'{"app_id":""}', b'{"app_id":"a","app_id":"b"}'):
            status, _, answer = call(service, "POST", path, body)
            assert (status, json.loads(answer)["rejected"]) == (400, "malformed"), (path, body, answer)


def test_an_ek_with_ten_challenges_pending_is_429_with_retry_after(machine_a):
    """Issue 51, case 5, over HTTP: the eleventh pending challenge of one EK, whatever its app id."""
    root, issuer = localca_files()
    anchors = [x509.load_pem_x509_certificate(p.read_bytes()) for p in (root, issuer) if p.exists()]
    key, certificate = make_ca_certificate("deviceid pending-bound service CA")
    store = open_store("memory:")
    app = make_app(PrivacyCA(key, certificate, anchors, store=store), Verifier([certificate], store=store))
    for i in range(10):
        status, _, answer = call(app, "POST", "/v1/enrolment/challenge",
                                 machine_a.device.enrolment_request(f"com.example.pending-{i}").encode())
        assert status == 200, answer
    status, headers, answer = call(app, "POST", "/v1/enrolment/challenge",
                                   machine_a.device.enrolment_request(APP).encode())
    assert (status, json.loads(answer)["rejected"]) == (429, "rate-limited"), answer
    assert 290 <= int(headers["Retry-After"]) <= 300 and 290 <= json.loads(answer)["retry_after"] <= 300


def test_every_schema_is_a_valid_draft_2020_12_schema():
    for name in SCHEMAS:
        jsonschema.Draft202012Validator.check_schema(schema(name))


def test_the_messages_of_a_real_enrolment_and_attestation_match_their_schemas(service, machine_a):
    request = machine_a.device.enrolment_request(APP)
    status, _, challenge = call(service, "POST", "/v1/enrolment/challenge", request.encode())
    assert status == 200, challenge
    response = machine_a.device.enrolment_response(challenge.decode())
    status, _, certificate = call(service, "POST", "/v1/enrolment/finish", response.encode())
    assert status == 200, certificate
    machine_a.device.accept_ak_certificate(certificate.decode(), APP)
    status, _, nonce_message = call(service, "POST", "/v1/nonce")
    nonce = base64.b64decode(json.loads(nonce_message)["nonce"])
    evidence = machine_a.device.evidence(APP, nonce)
    verification_request = {"v": 1, "type": "deviceid.verification-request", "evidence": json.loads(evidence),
                            "nonce": base64.b64encode(nonce).decode(), "app_id": APP}
    status, _, verification = call(service, "POST", "/v1/attestation/verify", json.dumps(verification_request).encode())
    assert status == 200, verification
    status, _, rejection = call(service, "POST", "/v1/attestation/verify", json.dumps(verification_request).encode())
    assert status == 403
    for name, message in [("enrolment-request", request), ("enrolment-challenge", challenge),
                          ("enrolment-response", response), ("ak-certificate", certificate),
                          ("nonce", nonce_message), ("attestation", evidence),
                          ("verification-request", json.dumps(verification_request)),
                          ("verification", verification), ("rejection", rejection)]:
        validator(name).validate(json.loads(message))
    # and a schema does say no: a wrong type, a missing field
    with pytest.raises(jsonschema.ValidationError):
        validator("attestation").validate({**json.loads(evidence), "type": "deviceid.enrolment-request"})
    with pytest.raises(jsonschema.ValidationError):
        validator("verification").validate({k: v for k, v in json.loads(verification).items() if k != "hardware_id"})


def strict(name):
    """validator(name) for a message that may carry no key the schema does not name (its top
    level: "unknown extra keys are ignored" lets a reader skip them, not a writer invent them)."""
    checked = validator(name)
    named = schema(name)

    def validate(message):
        checked.validate(message)
        patterns = [re.compile(p) for p in named.get("patternProperties", {})]
        extra = [k for k in message if k not in named["properties"] and not any(p.search(k) for p in patterns)]
        assert not extra, f"{name}: keys the schema does not name: {extra}"
    return validate


def test_deviceid_sends_only_the_keys_its_messages_schemas_name(service, machines, tmp_path):
    """Issue 50: each message deviceid itself writes (not tools_device's) against its schema, and no
    key beside those the schema names: a key added on one side only fails here."""
    from test_deviceid_device import deviceid, evidence
    machine = machines("strict-keys")
    request = deviceid(machine, "attest", "enrol", APP).stdout
    status, _, challenge = call(service, "POST", "/v1/enrolment/challenge", request.encode())
    assert status == 200, challenge
    response = deviceid(machine, "attest", "activate", APP, input=challenge.decode()).stdout
    status, _, certificate = call(service, "POST", "/v1/enrolment/finish", response.encode())
    assert status == 200, certificate
    status, _, nonce_message = call(service, "POST", "/v1/nonce")
    nonce = base64.b64decode(json.loads(nonce_message)["nonce"])
    made = evidence(machine, APP, nonce, certificate.decode(), tmp_path)
    digest = base64.urlsafe_b64encode(bytes(range(32))).rstrip(b"=").decode()
    (tmp_path / "ak.json").write_bytes(certificate)
    webauthn = deviceid(machine, "attest", "webauthn", APP, "--client-data-hash", digest, "--ak-certificate",
                        str(tmp_path / "ak.json")).stdout
    assertion = deviceid(machine, "assert", APP, "--client-data-hash", digest).stdout
    for name, message in [("enrolment-request", request), ("enrolment-challenge", challenge),
                          ("enrolment-response", response), ("ak-certificate", certificate),
                          ("nonce", nonce_message), ("attestation", made), ("webauthn-attestation", webauthn),
                          ("webauthn-assertion", assertion)]:
        strict(name)(json.loads(message))
    assert any(k.startswith("credential_") and k != "credential" for k in json.loads(response))  # swtpm: two EKs
    with pytest.raises(AssertionError, match="keys the schema does not name"):
        strict("attestation")({**json.loads(made), "hardware_id_v2": "x"})


def test_the_openapi_document_names_the_operations_and_embeds_the_schemas():
    document = openapi_document()
    operations = {op["operationId"]: (path, method) for path, item in document["paths"].items()
                  for method, op in item.items()}
    assert {k: operations[k] for k in ("newNonce", "enrolmentChallenge", "enrolmentFinish", "verifyAttestation",
                                       "newWebAuthnChallenge", "registerCredential", "verifyAssertion")} == {
        "newNonce": ("/v1/nonce", "post"), "enrolmentChallenge": ("/v1/enrolment/challenge", "post"),
        "enrolmentFinish": ("/v1/enrolment/finish", "post"), "verifyAttestation": ("/v1/attestation/verify", "post"),
        "newWebAuthnChallenge": ("/v1/webauthn/challenge", "post"), "registerCredential": ("/v1/webauthn/register", "post"),
        "verifyAssertion": ("/v1/assertion/verify", "post")}
    text = json.dumps(document)
    assert "$schema" not in text and ".schema.json" not in text  # OpenAPI 3.0 Schema Objects, local references
    assert document["components"]["schemas"]["verification-request"]["properties"]["evidence"] == {
        "$ref": "#/components/schemas/attestation"}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=12)
KEYS = ("v", "type", "app_id", "ek_certificate", "ak_public", "id", "credential", "evidence", "nonce", "attest",
        "signature", "app_public", "ak_certificate", "hardware_id", "attestation", "assertion", "client_data_json",
        "credential_id", "attestation_object", "authenticator_data", "counter")
TYPES = ("deviceid.enrolment-request", "deviceid.enrolment-response", "deviceid.verification-request",
         "deviceid.attestation", "deviceid.nonce", "deviceid.webauthn-registration", "deviceid.assertion-request",
         "deviceid.webauthn-attestation", "deviceid.webauthn-assertion")
fields = json_values | st.text(alphabet="AQgw+/=-_", max_size=40)
inner = st.fixed_dictionaries({"v": st.sampled_from([1, 2]), "type": st.sampled_from(TYPES)},
                              optional={k: fields for k in KEYS[2:]})
messages = st.fixed_dictionaries({"v": st.sampled_from([1, 1, 2, True, "1", 1.0]), "type": st.sampled_from(TYPES)},
                                 optional={k: inner if k in ("attestation", "assertion", "evidence") else fields
                                           for k in KEYS[2:]})


@settings(max_examples=200, deadline=None, database=None, derandomize=os.environ.get("DEVICEID_MODEL_RANDOM") != "1",
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.one_of(messages.map(lambda m: json.dumps(m).encode()), json_values.map(lambda v: json.dumps(v).encode()),
                      st.binary(max_size=200)),
       path=st.sampled_from(PATHS + ("/", "/v1", "/openapi.json", "/v1/crl")), method=st.sampled_from(["POST", "GET",
                                                                                                         "PUT"]))
def test_no_body_reaches_a_5xx(service, body, path, method):
    status, headers, answer = call(service, method, path, body)
    assert status < 500, (status, answer)
    if status >= 400:
        assert set(json.loads(answer)) >= {"rejected", "message"}


# Issue 51, case 6: text no store can keep. A lone surrogate cannot be encoded as UTF-8 (SQLite's
# and psycopg's UnicodeEncodeError) and PostgreSQL's text refuses NUL (psycopg.DataError): an
# enrolment response of such an id was a 500 on 1.0. It is the client's, and answered as
# malformed on every store, before any store is asked.
@pytest.mark.parametrize("text", ["\ud800", "a\u0000b", "\udfff\ud800"])
def test_text_no_store_can_keep_is_malformed_not_a_5xx(database_url, text):
    root, issuer = localca_files()
    anchors = [x509.load_pem_x509_certificate(p.read_bytes()) for p in (root, issuer) if p.exists()]
    key, certificate = make_ca_certificate("deviceid text test CA")
    store = open_store(database_url)
    app = make_app(PrivacyCA(key, certificate, anchors, store=store), Verifier([certificate], store=store))
    # json.dumps writes the surrogate and the NUL as \ud800 and \u0000 escapes: valid JSON text.
    body = json.dumps({"v": 1, "type": "deviceid.enrolment-response", "id": text, "credential": "AAAA"}).encode()
    status, _, answer = call(app, "POST", "/v1/enrolment/finish", body)
    assert status == 400, (status, answer)
    assert json.loads(answer)["rejected"] == "malformed", answer
    # A well-formed unknown id is the store's to answer: challenge-unknown, so the store was reachable.
    body = json.dumps({"v": 1, "type": "deviceid.enrolment-response", "id": "x", "credential": "AAAA"}).encode()
    assert json.loads(call(app, "POST", "/v1/enrolment/finish", body)[2])["rejected"] == "challenge-unknown"
    store.close()


@pytest.mark.parametrize("message", [
    {"v": 1, "type": "t", "nested": {"app_id": "\ud800"}},
    {"v": 1, "type": "t", "list": ["ok", "a\u0000"]},
    {"v": 1, "type": "t", "\ud800": "a key too"},
])
def test_every_message_refuses_text_no_store_can_keep_wherever_it_is(message):
    from deviceid_verifier import Rejected
    from deviceid_verifier._wire import loads
    with pytest.raises(Rejected) as refused:
        loads(json.dumps(message), "t")
    assert refused.value.reason == "malformed"


def test_a_read_only_database_is_503_with_retry_after_and_unhealthy(postgresql):
    """Issue 51, case 6 (the database's part): a PostgreSQL that answers but refuses writes (a
    standby after a failover) made POST /v1/nonce a 500 with a traceback while /v1/health said
    200. Both are 503 with Retry-After now; writable again, both answer."""
    import psycopg
    url = postgresql.new_database()
    key, certificate = make_ca_certificate("deviceid read-only test CA")
    store = open_store(url)  # migrated while writable
    app = make_app(PrivacyCA(key, certificate, [], store=store), Verifier([certificate], store=store))
    assert call(app, "GET", "/v1/health")[0] == 200
    name = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0] + "/postgres"

    def read_only(on):
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f"ALTER DATABASE {name} SET default_transaction_read_only = {'on' if on else 'off'}")
        store.close()  # the setting reaches new sessions

    read_only(True)
    for method, path in (("POST", "/v1/nonce"), ("GET", "/v1/health")):
        status, headers, answer = call(app, method, path)
        assert status == 503 and headers.get("Retry-After") == "1", (path, status, answer)
        assert json.loads(answer)["error"] == "unavailable"
    read_only(False)
    assert call(app, "POST", "/v1/nonce")[0] == 200
    assert call(app, "GET", "/v1/health")[0] == 200
    store.close()


def test_expired_nonces_and_challenges_are_purged_so_state_stays_bounded(database_url, monkeypatch):
    """Issue 51, case 5: expired nonces and challenges were never removed (6,500 rows after expiry
    and more traffic). The service purges when it issues, at most once per interval (0 here):
    after a lifetime, the tables hold only what was issued since. The service's clock is the
    test's: with the wall clock, a slow machine let the first ones expire while the last were
    issued (44 rows of 60 once)."""
    import datetime
    from deviceid_verifier import WebAuthnVerifier, _chain
    clock = [datetime.datetime(2026, 12, 6, 12, 0, 0)]
    monkeypatch.setattr(_chain, "utcnow", lambda: clock[0])
    key, certificate = make_ca_certificate("deviceid purge test CA")
    store = open_store(database_url)
    minute = datetime.timedelta(minutes=1)
    app = make_app(PrivacyCA(key, certificate, [], store=store), Verifier([certificate], nonce_lifetime=minute, store=store),
                   WebAuthnVerifier([certificate], challenge_lifetime=minute, store=store), purge_interval=0.0)

    def rows():
        if database_url.startswith("sqlite"):
            import sqlite3
            with sqlite3.connect(database_url[len("sqlite:///"):]) as connection:
                return connection.execute("SELECT COUNT(*) FROM nonces").fetchone()[0]
        import psycopg
        with psycopg.connect(database_url) as connection:
            return connection.execute("SELECT COUNT(*) FROM nonces").fetchone()[0]

    for _ in range(30):
        assert call(app, "POST", "/v1/nonce")[0] == 200
        assert call(app, "POST", "/v1/webauthn/challenge")[0] == 200
    assert rows() == 60
    clock[0] += minute + datetime.timedelta(seconds=1)  # the lifetime passes: every one issued so far has expired
    assert call(app, "POST", "/v1/nonce")[0] == 200
    assert rows() == 1, "the expired nonces and WebAuthn challenges are gone; the new nonce is kept"
    store.close()

