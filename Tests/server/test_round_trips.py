"""What a verifyAssertion sends PostgreSQL, counted in the database's statement log: each statement
is a round trip a worker waits for (BEGIN and COMMIT too), so the count is the service's floor
(issue 51's speed; bench/server.py measures the service beside it)."""
import datetime
import hashlib
import json

import psycopg
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

from deviceid_verifier import CertificateRecord, CredentialRecord, Limit, Rejected, WebAuthnVerifier, open_store
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


def test_a_verify_assertion_is_one_round_trip(postgresql, new_ca_certificate):
    """A credential's first assertion in a process reads it with its AK certificate's record and
    its device's ban (two statements, no BEGIN and COMMIT), then spends the challenge and raises
    the counter in one statement (spend_assertion); every later one, its app id and key known, is
    checked up to its signature first and then read and written in one statement
    (checked_spend_assertion): one round trip and one commit, the request's last use of the
    database (docs/SERVER-STATE.md, invariant 4: a retry after a 503 is safe). Before issue 51 it
    was 12 round trips; then 5, the spending a transaction of two updates."""
    url = postgresql.new_database()
    open_store(url).close()  # migrated before its statements are logged
    with psycopg.connect(postgresql.url_base + "/postgres", autocommit=True) as connection:
        connection.execute(f"ALTER DATABASE {url.rsplit('/', 1)[1]} SET log_statement = 'all'")
    store = open_store(url, migrate=False)
    _, ca_certificate = new_ca_certificate("deviceid round trips CA")
    webauthn = WebAuthnVerifier([ca_certificate], store=store)
    key = ec.generate_private_key(ec.SECP256R1())
    credential_id = hashlib.sha256(b"the credential key's public area").digest()
    now = datetime.datetime.utcnow()
    store.add_certificate(CertificateRecord(0xABC, b"p" * 32, APP, b"\x00\x0b" + bytes(32), now,
                                            now + datetime.timedelta(days=1)), Limit(5, datetime.timedelta(days=1)))
    store.add_credential(CredentialRecord(credential_id, APP, cose_key(key), b"\x00\x0b" + bytes(32), 0xABC, 0,
                                          now, ak_anchor=ca_key_id(ca_certificate),
                                          ak_not_after=now + datetime.timedelta(days=1)))

    def assertion(counter):
        client_data = json.dumps({"type": "webauthn.get", "challenge": b64url(webauthn.new_challenge()),
                                  "origin": "app:test"}).encode()
        authenticator_data = hashlib.sha256(APP.encode()).digest() + b"\x00" + counter.to_bytes(4, "big")
        signature = key.sign(authenticator_data + hashlib.sha256(client_data).digest(), ec.ECDSA(hashes.SHA256()))
        return json.dumps({"v": 1, "type": "deviceid.webauthn-assertion", "app_id": APP,
                           "credential_id": b64url(credential_id), "authenticator_data": b64url(authenticator_data),
                           "signature": b64url(signature), "counter": counter}), client_data

    accepted = []
    for counter, expected in ((1, [["SELECT", "c.credential_id,", "c.app_id,"], ["SELECT", "since,", "reason,"],
                                   ["WITH", "spent", "AS"]]),
                              (2, [["WITH", "found", "AS"]]), (3, [["WITH", "found", "AS"]])):
        message, client_data = assertion(counter)
        statements = statements_of(postgresql, url,
                                   lambda: accepted.append(webauthn.verify_assertion(message, client_data)))
        assert [s.split(": ", 1)[1].split()[0:3] for s in statements] == expected, statements
    assert [credential.counter for credential in accepted] == [1, 2, 3]

    # the one statement checks what the two did: a revocation of the device (the certificate's, and
    # a ban) refuses the next assertion and spends nothing, which the device's retry can spend once lifted
    assert store.revoke(0xABC, "key-compromise", now)
    message, client_data = assertion(4)
    with pytest.raises(Rejected) as refused:
        webauthn.verify_assertion(message, client_data)
    assert refused.value.reason == "revoked"
    assert store.credential(credential_id).counter == 3
    with store._tx() as cursor:  # lifted, and the certificate's revocation undone: no operator command does that
        cursor.execute("UPDATE certificates SET revoked = NULL")
    assert store.lift(0xABC) == 1
    assert webauthn.verify_assertion(message, client_data).counter == 4

    # a credential removed by hand from the store: the one statement finds none and writes nothing
    with store._tx() as cursor:
        cursor.execute("DELETE FROM credentials")
    message, client_data = assertion(5)
    with pytest.raises(Rejected) as refused:
        webauthn.verify_assertion(message, client_data)
    assert refused.value.reason == "credential-unknown"
