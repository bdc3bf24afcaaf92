"""What a verifyAssertion sends PostgreSQL, counted in the database's statement log: each statement
is a round trip a worker waits for (BEGIN and COMMIT too), so the count is the service's floor
(issue 51's speed; bench/server.py measures the service beside it)."""
import datetime
import hashlib
import json

import psycopg
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

from deviceid_verifier import CredentialRecord, WebAuthnVerifier, open_store
from deviceid_verifier._crl import ca_key_id
from deviceid_verifier._wire import b64url

APP = "com.example.trips"


def cose_key(key):
    """The COSE_Key (EC2, ES256, P-256) of `key`, in CBOR."""
    numbers = key.public_key().public_numbers()
    return (bytes([0xA5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20]) + numbers.x.to_bytes(32, "big")
            + bytes([0x22, 0x58, 0x20]) + numbers.y.to_bytes(32, "big"))


def statements_of(postgresql, url, action):
    """The statements PostgreSQL ran for the database of `url` while `action()` ran."""
    log = postgresql.dir / "log"
    before = log.stat().st_size
    action()
    with open(log, "rb") as f:
        f.seek(before)
        lines = f.read().decode("utf-8", "replace").splitlines()
    return [line.split("LOG:  ", 1)[1] for line in lines
            if "LOG:  statement: " in line or "LOG:  execute " in line]


def test_a_verify_assertion_is_two_round_trips(postgresql, new_ca_certificate):
    """The credential read with its AK certificate's record (one statement, no BEGIN and COMMIT),
    then the challenge used up and the counter raised in one statement (spend_assertion), the
    request's last use of the database and its one commit (docs/SERVER-STATE.md, invariant 4: a
    retry after a 503 is safe). Before issue 51 it was 12 round trips, with the certificate read
    on its own and every read wrapped; then 5, the spending a transaction of two updates."""
    url = postgresql.new_database()
    open_store(url).close()  # migrated before its statements are logged
    with psycopg.connect(postgresql.url_base + "/postgres", autocommit=True) as connection:
        connection.execute(f"ALTER DATABASE {url.rsplit('/', 1)[1]} SET log_statement = 'all'")
    store = open_store(url, migrate=False)
    _, ca_certificate = new_ca_certificate("deviceid round trips CA")
    webauthn = WebAuthnVerifier([ca_certificate], store=store)
    key = ec.generate_private_key(ec.SECP256R1())
    credential_id = hashlib.sha256(b"the credential key's public area").digest()
    store.add_credential(CredentialRecord(credential_id, APP, cose_key(key), b"\x00\x0b" + bytes(32), 0xABC, 0,
                                          datetime.datetime.utcnow(), ak_anchor=ca_key_id(ca_certificate),
                                          ak_not_after=datetime.datetime.utcnow() + datetime.timedelta(days=1)))
    client_data = json.dumps({"type": "webauthn.get", "challenge": b64url(webauthn.new_challenge()),
                              "origin": "app:test"}).encode()
    authenticator_data = hashlib.sha256(APP.encode()).digest() + b"\x00" + (1).to_bytes(4, "big")
    signature = key.sign(authenticator_data + hashlib.sha256(client_data).digest(), ec.ECDSA(hashes.SHA256()))
    assertion = json.dumps({"v": 1, "type": "deviceid.webauthn-assertion", "app_id": APP,
                            "credential_id": b64url(credential_id), "authenticator_data": b64url(authenticator_data),
                            "signature": b64url(signature), "counter": 1})
    accepted = []
    statements = statements_of(postgresql, url,
                               lambda: accepted.append(webauthn.verify_assertion(assertion, client_data)))
    assert accepted[0].counter == 1
    assert [s.split(": ", 1)[1].split()[0:3] for s in statements] == [
        ["SELECT", "c.credential_id,", "c.app_id,"], ["WITH", "spent", "AS"]], statements
