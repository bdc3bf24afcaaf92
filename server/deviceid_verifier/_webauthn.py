"""The app server's side of App Attest for Linux (docs/HARDWARE-ID.md): registration of the WebAuthn
"tpm" attestation `deviceid attest webauthn` prints, and verification of the assertions
`deviceid assert` prints, with the counter rule.

Any WebAuthn library (python-fido2, py_webauthn, …) accepts the same attestation object with the
Privacy CA's certificate as its "tpm" root. This verifier needs only `cryptography`, shares the
v1 Verifier's checks of the AK certificate (chain, revocation, the app id it names), and knows
DeviceID's frozen templates: the credential must be the app's credential key, the signer the
app's AK as an owner-hierarchy primary."""

from __future__ import annotations

import dataclasses
import datetime
import functools
import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple, Union

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from . import _akcert, _cbor, _ca, _chain, _tpm, _wire
from ._crl import revocation_lists
from ._errors import Rejected
from ._store import Ban, CertificateRecord, CredentialRecord, MemoryStore, Store, Tenant
from ._store._base import COUNTER_ACCEPTED, COUNTER_REFUSED, WEBAUTHN
from ._verify import _NonceBook, request_key

#: Authenticator data flags (WebAuthn §6.1).
FLAG_ATTESTED = 0x40
FLAG_EXTENSIONS = 0x80
#: The most certificates an x5c may hold (the AK's and its intermediates): each costs a signature check.
MAX_CHAIN = 4
#: The most credentials whose app id and key a verifier keeps (then it forgets them all and reads them again).
MAX_KNOWN = 65_536
#: COSE: kty EC2, alg ES256, crv P-256 (RFC 9053).
_COSE_EC2, _COSE_ES256, _COSE_P256 = 2, -7, 1


@dataclass(frozen=True)
class WebAuthnCredential:
    """A registered credential: what the server keeps per device and app, and passes back to
    verify_assertion(), which returns it with the counter it accepted. Keep `counter` with it:
    an assertion whose counter is not above it is rejected ("counter")."""

    #: the app id: the relying party id, which the AK certificate names too
    app_id: str
    #: SHA-256 of the credential key's public area (the digest in its Name)
    credential_id: bytes
    #: the credential public key as the COSE_Key authenticator data carried (CBOR)
    cose_key: bytes
    #: the highest signCount accepted: 0 at registration
    counter: int
    #: the Name of the app's AK, which certified the credential key
    ak_name: bytes
    #: the serial number of the AK certificate: when the verifier shares the issuing CA's store,
    #: assertions stop passing once it is revoked
    ak_serial: int
    #: when an assertion's counter first failed to rise above `counter` at a verifier on this
    #: credential's store: a clone of the TPM may exist (sticky; None while it never happened)
    counter_failed: Optional[datetime.datetime] = None
    #: the trusted CA the AK certificate chained to (SHA-256 of its SubjectPublicKeyInfo) and the
    #: end of its validity: assertions stop passing once that CA is no longer trusted or the
    #: certificate expired. None in a credential registered before migration 0006 (register it again)
    ak_anchor: Optional[bytes] = None
    ak_not_after: Optional[datetime.datetime] = None
    #: When the verifier shares the issuing CA's store, in what verify_assertion() returns: the CA's
    #: pseudonym of the EK the AK certificate was issued to, which PrivacyCA.device_check takes
    #: (never shown to app servers, never in to_json()).
    ek_pseudonym: Optional[bytes] = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def public_key(self) -> ec.EllipticCurvePublicKey:
        return _public_key_of(self.cose_key)

    def to_json(self) -> str:
        """The credential as JSON text (base64url fields), for from_json() later."""
        fields: Dict[str, Any] = {"app_id": self.app_id, "credential_id": _wire.b64url(self.credential_id),
                                  "cose_key": _wire.b64url(self.cose_key), "counter": self.counter,
                                  "ak_name": _wire.b64url(self.ak_name), "ak_serial": self.ak_serial}
        if self.counter_failed is not None:
            fields["counter_failed"] = self.counter_failed.isoformat() + "Z"
        if self.ak_anchor is not None and self.ak_not_after is not None:
            fields["ak_anchor"] = _wire.b64url(self.ak_anchor)
            fields["ak_not_after"] = self.ak_not_after.isoformat() + "Z"
        return json.dumps(fields, separators=(",", ":"))

    @classmethod
    def _of(cls, record: CredentialRecord) -> "WebAuthnCredential":
        return cls(record.app_id, record.credential_id, record.cose_key, record.counter, record.ak_name,
                   record.ak_serial, record.counter_failed, record.ak_anchor, record.ak_not_after)

    @classmethod
    def from_json(cls, text: Union[str, bytes]) -> "WebAuthnCredential":
        """The credential to_json() wrote; ValueError for anything else."""
        try:
            fields = json.loads(text)
            counter, serial = fields["counter"], fields["ak_serial"]
            if type(counter) is not int or not 0 <= counter < 1 << 32:  # noqa: E721 (true is not 1)
                raise ValueError("counter")
            if type(serial) is not int or serial <= 0:  # noqa: E721
                raise ValueError("ak_serial")
            failed = fields.get("counter_failed")
            anchor, not_after = fields.get("ak_anchor"), fields.get("ak_not_after")
            if (anchor is None) != (not_after is None):
                raise ValueError("ak_anchor and ak_not_after come together")
            anchor_id = None if anchor is None else _wire.from_b64url(anchor, "ak_anchor")
            if anchor_id is not None and len(anchor_id) != 32:
                raise ValueError("ak_anchor is not 32 bytes")
            credential = cls(_ca.check_app_id(fields["app_id"]), _wire.from_b64url(fields["credential_id"], "id"),
                             _wire.from_b64url(fields["cose_key"], "key"), counter,
                             _wire.from_b64url(fields["ak_name"], "ak_name"), serial,
                             None if failed is None else _ca.parse_utc(failed), anchor_id,
                             None if not_after is None else _ca.parse_utc(not_after))
            credential.public_key  # noqa: B018  (the key must parse)
            return credential
        except (ValueError, KeyError, TypeError, RecursionError, Rejected) as e:
            raise ValueError(f"not a WebAuthnCredential: {e}") from None


@functools.lru_cache(maxsize=4096)
def _public_key_of(cose_key: bytes) -> ec.EllipticCurvePublicKey:
    """The key of a credential's COSE key, parsed once per process for the credentials in use:
    the CBOR and the point's validation cost an assertion about as much as its signature check."""
    return _cose_public_key(_cbor.loads(cose_key, "the COSE key"))


def _cose_public_key(key: Any) -> ec.EllipticCurvePublicKey:
    if not isinstance(key, dict) or key.get(1) != _COSE_EC2 or key.get(3) != _COSE_ES256 or key.get(-1) != _COSE_P256:
        raise Rejected("credential-mismatch", "the credential public key is not an EC2 ES256 P-256 COSE key")
    x, y = key.get(-2), key.get(-3)
    if not (isinstance(x, bytes) and isinstance(y, bytes) and len(x) == len(y) == _tpm.P256_BYTES):
        raise Rejected("credential-mismatch", "the COSE key's x and y are not 32 bytes each")
    try:
        return ec.EllipticCurvePublicNumbers(int.from_bytes(x, "big"), int.from_bytes(y, "big"),
                                             ec.SECP256R1()).public_key()
    except ValueError:
        raise Rejected("credential-mismatch", "the COSE key's point is not on P-256") from None


def _text_bytes(message: Union[str, bytes]) -> bytes:
    return message if isinstance(message, bytes) else message.encode("utf-8", "surrogatepass")


def _point(key: ec.EllipticCurvePublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)


def _field(statement: Mapping[Any, Any], key: str, kind: type) -> Any:
    value = statement.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise Rejected("malformed", f"the attestation statement's {key!r} is missing or not a {kind.__name__}")
    return value


@dataclass(frozen=True)
class _AuthenticatorData:
    raw: bytes
    rp_id_hash: bytes
    flags: int
    counter: int
    credential_id: bytes = b""
    cose_key: bytes = b""

    @classmethod
    def parse(cls, raw: bytes) -> "_AuthenticatorData":
        if len(raw) < 37:
            raise Rejected("malformed", f"the authenticator data is {len(raw)} bytes, shorter than 37")
        flags, counter = raw[32], int.from_bytes(raw[33:37], "big")
        if flags & FLAG_EXTENSIONS:  # DeviceID writes none: what would read them differently is refused
            raise Rejected("malformed", "the authenticator data claims extensions")
        if not flags & FLAG_ATTESTED:
            if len(raw) != 37:
                raise Rejected("malformed", "the authenticator data has bytes after its counter")
            return cls(raw, raw[:32], flags, counter)
        if len(raw) < 55:
            raise Rejected("malformed", "the authenticator data ends inside its attested credential data")
        length = int.from_bytes(raw[53:55], "big")
        credential_id = raw[55:55 + length]
        if len(credential_id) != length:
            raise Rejected("malformed", "the authenticator data ends inside its credential id")
        rest = raw[55 + length:]
        _, end = _cbor.prefix(rest, "the credential public key")
        if end != len(rest):
            raise Rejected("malformed", "the authenticator data has bytes after its credential public key")
        return cls(raw, raw[:32], flags, counter, credential_id, rest[:end])


class WebAuthnVerifier:
    """Registers DeviceID's WebAuthn attestations and verifies their assertions, for an app server
    that trusts the Privacy CAs whose certificates are `ca_certificates`.

    Challenges come from new_challenge(), live `challenge_lifetime` and are used up by the first
    registration or assertion whose client data carries them and that passes every check before
    (docs/SERVER-STATE.md, "Spending"): junk with a challenge spends nothing. `origins`,
    when given, are the only client data origins accepted. `store` keeps the challenges (and, when
    it is the issuing PrivacyCA's, says which AK certificates are revoked), as for Verifier."""

    def __init__(self, ca_certificates: Sequence[x509.Certificate], *, origins: Optional[Sequence[str]] = None,
                 challenge_lifetime: datetime.timedelta = datetime.timedelta(minutes=5),
                 store: Optional[Store] = None, crls: Sequence[bytes] = ()) -> None:
        if not ca_certificates:
            raise ValueError("a WebAuthnVerifier needs at least one CA certificate")
        self._anchors = _chain.trusted_set(ca_certificates, "CA certificate")
        self._anchors_by_key = _akcert.anchors_by_key(self._anchors)
        self._crls = revocation_lists(self._anchors, crls)
        self._origins = None if origins is None else frozenset(origins)
        self._store: Store = store if store is not None else MemoryStore()
        self._challenges = _NonceBook(self._store, challenge_lifetime, WEBAUTHN)
        #: credential id → (app id, COSE key) of the credentials this verifier read from its store,
        #: which never change for an id (add_credential): with them an assertion is checked up to
        #: its signature before the store is asked, and then read and written in one operation
        self._known: Dict[bytes, Tuple[str, bytes]] = {}
        self._challenge_lifetime = challenge_lifetime

    @property
    def challenge_lifetime(self) -> datetime.timedelta:
        """How long a challenge of new_challenge() lives."""
        return self._challenge_lifetime

    def load_crl(self, crl: bytes) -> bool:
        """Hold a trusted CA's CRL, as Verifier.load_crl: register() then rejects the AK
        certificates it lists, and verify_assertion() the credentials they certified."""
        return self._crls.load(crl)

    def new_challenge(self, app_id: Optional[str] = None, *, tenant: Optional[Tenant] = None) -> bytes:
        """A fresh 32-byte challenge for the app to put into its client data; with `app_id`, only
        that app's registrations and assertions can spend it; with `tenant`, counted against its
        issue limit (Rejected "rate-limited" beyond it, with retry_after)."""
        return self._challenges.issue(app_id, tenant)

    def _client_data(self, client_data_json: bytes, kind: str) -> tuple[bytes, bytes]:
        """SHA-256 of the client data and its challenge (spent later, by _challenges.spend), once
        its type and origin pass."""
        if not isinstance(client_data_json, bytes):
            raise TypeError("client_data_json must be bytes: the exact bytes the app hashed")
        try:
            client_data = json.loads(client_data_json, object_pairs_hook=_wire.no_duplicates)
        except (ValueError, RecursionError, Rejected):
            raise Rejected("client-data", "the client data is not JSON with each key once") from None
        if not isinstance(client_data, dict) or client_data.get("type") != kind:
            raise Rejected("client-data", f"the client data is not of type {kind!r}")
        try:
            challenge = _wire.from_b64url(client_data.get("challenge"), "the client data's challenge")
        except Rejected:
            raise Rejected("client-data", "the client data's challenge is not base64url") from None
        origin = client_data.get("origin")
        if self._origins is not None and (not isinstance(origin, str) or origin not in self._origins):
            raise Rejected("client-data", f"the client data's origin {origin!r} is not one this server accepts")
        return hashlib.sha256(client_data_json).digest(), challenge

    def register(self, attestation: Union[str, bytes], client_data_json: bytes, *,
                 app_id: Optional[str] = None, request_id: Optional[str] = None) -> WebAuthnCredential:
        """Register the credential of a deviceid.webauthn-attestation message made over
        `client_data_json` (of type "webauthn.create", with a challenge of new_challenge()); or
        raise Rejected with the reason of the first check that failed.

        The checks, as WebAuthn §7.1 and §8.3 ask and DeviceID's templates allow: the challenge;
        the format "tpm" 2.0 with ES256; rpIdHash is SHA-256 of the app id; the AK certificate
        (x5c) chains to a trusted CA, is not revoked and names the message's app id (and
        `app_id`); the AK signed certInfo; certInfo is TPM-generated, a certification by the AK as
        an owner-hierarchy primary, over SHA-256(authData ‖ clientDataHash) ("nonce-mismatch"); it
        certifies pubArea, an owner-hierarchy primary of the credential key template
        ("credential-key-template"), whose point is the COSE key and whose digest is the
        credential id ("credential-mismatch"). Last, the challenge is spent with the registration,
        in one transaction; `request_id` keeps its receipt, as for Verifier.verify."""
        message = _wire.loads(attestation, _wire.WEBAUTHN_ATTESTATION)
        claimed_app_id = _ca.check_app_id(message.get("app_id"))
        claimed_id = _wire.b64url_field(message, "credential_id")
        attestation_object = _wire.b64url_field(message, "attestation_object")
        client_data_hash, challenge = self._client_data(client_data_json, "webauthn.create")

        decoded = _cbor.loads(attestation_object, "the attestation object")
        if not isinstance(decoded, dict) or decoded.get("fmt") != "tpm":
            raise Rejected("malformed", "the attestation object is not of format \"tpm\"")
        statement = _field(decoded, "attStmt", dict)
        authenticator_data = _AuthenticatorData.parse(_field(decoded, "authData", bytes))
        if _field(statement, "ver", str) != "2.0" or _field(statement, "alg", int) != _COSE_ES256:
            raise Rejected("malformed", "the attestation statement is not TPM 2.0 with ES256")
        chain = _field(statement, "x5c", list)
        if not 0 < len(chain) <= MAX_CHAIN or not all(isinstance(c, bytes) for c in chain):
            raise Rejected("malformed", "the attestation statement's x5c is not a list of certificates")
        signature = _field(statement, "sig", bytes)
        cert_info = _field(statement, "certInfo", bytes)
        public_area = _field(statement, "pubArea", bytes)

        if not hmac.compare_digest(authenticator_data.rp_id_hash, hashlib.sha256(claimed_app_id.encode()).digest()):
            raise Rejected("rp-id-mismatch", "the authenticator data's rpIdHash is not SHA-256 of the app id")
        if not authenticator_data.flags & FLAG_ATTESTED:
            raise Rejected("malformed", "the authenticator data carries no attested credential")

        # The AK: the certificate of a trusted CA for this app id, as the v1 Verifier checks it.
        intermediates = []
        for der in chain[1:]:
            try:
                intermediates.append(_chain.load_der(der))
            except _chain.ChainError as e:
                raise Rejected("malformed", f"x5c: {e}") from None
        ak = _akcert.trusted(chain[0], self._anchors, self._store, intermediates, self._crls)
        ak_certificate, certified_app_id = ak.certificate, ak.app_id
        if certified_app_id != claimed_app_id:
            raise Rejected("app-id-mismatch", f"the attestation claims app id {claimed_app_id!r}, but its AK "
                                              f"certificate was issued for {certified_app_id!r}")
        if app_id is not None and certified_app_id != app_id:
            raise Rejected("app-id-mismatch", f"the attestation is for app id {certified_app_id!r}, not {app_id!r}")
        ak_key = ak_certificate.public_key()
        if not isinstance(ak_key, ec.EllipticCurvePublicKey) or not isinstance(ak_key.curve, ec.SECP256R1):
            raise Rejected("ak-mismatch", "the AK certificate's key is not a P-256 key")
        # The AK's Name: the one its certificate names (the CA computed it from the AK's public
        # area), else that of the frozen AK template with the certificate's point.
        point = _point(ak_key)
        ak_name = _akcert.ak_name_of(ak_certificate) or _tpm.name_of(
            _tpm.ecc_public(_tpm.AK_ATTRIBUTES, point[1:33], point[33:]))

        # The AK's signature, before anything in certInfo is believed.
        try:
            ak_key.verify(signature, cert_info, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            raise Rejected("signature", "the AK's signature over certInfo does not verify") from None
        info = _tpm.parse_certify_attest(cert_info)
        _akcert.check_signer(info, ak_name)
        if not hmac.compare_digest(info.extra_data,
                                   hashlib.sha256(authenticator_data.raw + client_data_hash).digest()):
            raise Rejected("nonce-mismatch", "certInfo.extraData is not SHA-256(authData ‖ clientDataHash): the "
                                             "attestation was made for other authenticator data or client data")

        # The credential: the app's credential key, certified by Name, the key authData carries.
        x, y = _tpm.ecc_point_of_template(public_area, _tpm.CREDENTIAL_KEY_PREFIX, "credential-key-template",
                                          "pubArea")
        cose = _cose_public_key(_cbor.loads(authenticator_data.cose_key, "the COSE key"))
        if _point(cose) != b"\x04" + x + y:
            raise Rejected("credential-mismatch", "the COSE key in authData is not the key of pubArea")
        name = _tpm.name_of(public_area)
        if info.name != name or info.qualified_name != _tpm.qualified_name_of_primary(_tpm.TPM_RH_OWNER, name):
            raise Rejected("credential-mismatch", "certInfo does not certify pubArea as an owner-hierarchy primary")
        if not (authenticator_data.credential_id == claimed_id == hashlib.sha256(public_area).digest()):
            raise Rejected("credential-mismatch", "the credential id is not SHA-256 of pubArea in authData and the message")
        record = CredentialRecord(claimed_id, certified_app_id, authenticator_data.cose_key, ak_name,
                                  ak_certificate.serial_number, authenticator_data.counter, _chain.utcnow(),
                                  ak_anchor=ak.anchor, ak_not_after=ak.not_after)
        registered: list[CredentialRecord] = []

        def add() -> bytes:
            stored = self._store.add_credential(record)
            if stored is None:  # rolls the spending back: nothing changed
                raise Rejected("credential-mismatch", "the credential id is registered for another app id")
            registered.append(stored)
            return b""

        key = request_key("registerCredential", request_id, _text_bytes(attestation), client_data_json)
        with self._store.atomic():
            self._challenges.spend(challenge, certified_app_id, key, add)
            if not registered:  # the retry of a registration committed before: the same upsert again
                add()
        return WebAuthnCredential._of(registered[0])

    def credential(self, credential_id: bytes) -> Optional[WebAuthnCredential]:
        """The credential registered with this id in the verifier's store, with its counter."""
        stored = self._store.credential(credential_id)
        return None if stored is None else WebAuthnCredential._of(stored)

    def verify_assertion(self, assertion: Union[str, bytes], client_data_json: bytes,
                         credential: Optional[WebAuthnCredential] = None, *,
                         app_id: Optional[str] = None, request_id: Optional[str] = None) -> WebAuthnCredential:
        """Verify a deviceid.webauthn-assertion message made over `client_data_json` (of type
        "webauthn.get", with a challenge of new_challenge()) by `credential`, by default the one
        registered with the message's credential id in the verifier's store ("credential-unknown"
        if none, or registered before the AK certificate's CA and expiry were kept: it must be
        registered again); return the credential with the counter it carries.

        The counter rule is the store's when it knows the credential (and a `credential` given
        may only raise the bar): of the assertions with one counter value that
        reach any worker on the store, exactly one is accepted, and one that does not rise marks
        the credential for good (`counter_failed`). A credential the store does not know (kept by
        the caller, to_json/from_json) is judged by its own counter, which the caller replaces
        with the one returned. `app_id`, when given, is the only app id accepted.

        Rejected "app-id-mismatch" or "credential-mismatch" for another app's or credential's;
        "rp-id-mismatch"; "signature"; the AK certificate that certified the credential checked
        again, as registration checked it: "ak-untrusted" once it expired or its CA is no longer
        among the verifier's, "revoked" once it is (with the CA's store, or on its CA's CRL held),
        "revocation-unknown" while that CRL is past its nextUpdate; "counter" when its signCount is not above the credential's counter: a
        replayed assertion, or one from a clone of the TPM's state, which counts on from the same
        value as the original. A "counter" rejection should end the server's trust in the
        credential: nothing binds the count to the TPM's counter but DeviceID's code (any process
        that can use the TPM can sign any count), so the two copies may go on with growing counts;
        the store's mark (`counter_failed`) says so in every later answer.

        The challenge is spent last, with the counter, in one transaction: an assertion that fails
        a check before spends nothing; one refused for its counter spends it (the mark stays).
        `request_id` keeps the spending's receipt, as for Verifier.verify."""
        message = _wire.loads(assertion, _wire.WEBAUTHN_ASSERTION)
        credential_id = _wire.b64url_field(message, "credential_id")
        raw = _wire.b64url_field(message, "authenticator_data")
        signature = _wire.b64url_field(message, "signature")
        client_data_hash, challenge = self._client_data(client_data_json, "webauthn.get")
        key = request_key("verifyAssertion", request_id, _text_bytes(assertion), client_data_json)
        known = self._known.get(credential_id) if credential is None else None
        stored: Optional[CredentialRecord]
        if known is not None:  # its app id and key read before: one operation of the store reads and writes
            counter = self._signed(message, known[0], app_id, False, raw, signature, client_data_hash,
                                   _public_key_of(known[1]))
            now = _chain.utcnow()
            anchors = frozenset(anchor for anchor in _akcert.trusted_anchors(self._anchors_by_key, now)
                                if not self._crls.holds(anchor))  # a CRL's revocations are checked here, after
            checked = self._challenges.checked_spend_assertion(credential_id, known[0], known[1], anchors, challenge,
                                                               counter, key, now)
            if checked.credential is None or (checked.credential.app_id, checked.credential.cose_key) != known:
                # not what was read before (removed by hand from the store): nothing was written; read it again
                del self._known[credential_id]
                return self.verify_assertion(assertion, client_data_json, app_id=app_id, request_id=request_id)
            stored, credential, record = checked.credential, WebAuthnCredential._of(checked.credential), checked.certificate
            self._still_trusted(credential, record, lambda _, __: checked.ban, now)
            # the store's check passed, or (a CRL held, which passed here) it is spent now
            answer = self._challenges.answer(checked.spent) if checked.spent is not None else \
                self._challenges.spend_assertion(challenge, credential.app_id, key, credential_id, counter)
        else:
            # The credential and its AK certificate's record, in one read of the store.
            stored, stored_certificate = self._store.credential_and_certificate(credential_id) or (None, None)
            if credential is None:
                if stored is None:
                    raise Rejected("credential-unknown", "the assertion names a credential this server has not "
                                                         "registered")
                credential = WebAuthnCredential._of(stored)
            counter = self._signed(message, credential.app_id, app_id, credential_id != credential.credential_id, raw,
                                   signature, client_data_hash, credential.public_key)
            now = _chain.utcnow()
            record = (stored_certificate if stored is not None and stored.ak_serial == credential.ak_serial
                      else self._store.certificate(credential.ak_serial))
            self._still_trusted(credential, record, self._store.banned, now)
            if stored is None:  # the caller's credential alone: its own counter
                accepted = counter > credential.counter
                answer = self._challenges.spend(challenge, credential.app_id, key,
                                                lambda: COUNTER_ACCEPTED if accepted else COUNTER_REFUSED)
            else:  # the store's counter, every worker's; a caller's copy ahead of it only marks (0 rises above none)
                if len(self._known) >= MAX_KNOWN:
                    self._known.clear()
                self._known[credential_id] = (stored.app_id, stored.cose_key)
                answer = self._challenges.spend_assertion(challenge, credential.app_id, key, credential_id,
                                                          counter if counter > credential.counter else 0)
        if answer != COUNTER_ACCEPTED:
            raise Rejected("counter", f"the assertion's counter {counter} is not above the last one accepted for "
                                      "the credential: a replay, or a clone of the TPM")
        return dataclasses.replace(credential, counter=counter,
                                   counter_failed=stored.counter_failed if stored is not None else credential.counter_failed,
                                   ek_pseudonym=None if record is None else record.ek_pseudonym)

    @staticmethod
    def _signed(message: Mapping[str, Any], credential_app_id: str, app_id: Optional[str], other_credential: bool,
                raw: bytes, signature: bytes, client_data_hash: bytes, public_key: ec.EllipticCurvePublicKey) -> int:
        """The checks of an assertion that need the credential's app id and key and nothing the
        store may change: the app ids, the credential, the authenticator data, the signature; its
        counter."""
        if message.get("app_id") != credential_app_id:
            raise Rejected("app-id-mismatch", f"the assertion is for app id {message.get('app_id')!r}, "
                                              f"not {credential_app_id!r}")
        if app_id is not None and credential_app_id != app_id:
            raise Rejected("app-id-mismatch", f"the assertion is for app id {credential_app_id!r}, not {app_id!r}")
        if other_credential:
            raise Rejected("credential-mismatch", "the assertion names another credential")
        authenticator_data = _AuthenticatorData.parse(raw)
        if authenticator_data.flags & FLAG_ATTESTED:
            raise Rejected("malformed", "an assertion's authenticator data carries attested credential data")
        claimed_counter = message.get("counter")
        if type(claimed_counter) is not int or claimed_counter != authenticator_data.counter:  # noqa: E721
            raise Rejected("malformed", "the message's counter is not the authenticator data's signCount")
        if not hmac.compare_digest(authenticator_data.rp_id_hash, hashlib.sha256(credential_app_id.encode()).digest()):
            raise Rejected("rp-id-mismatch", "the authenticator data's rpIdHash is not SHA-256 of the app id")
        try:
            public_key.verify(signature, raw + client_data_hash, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            raise Rejected("signature", "the credential key's signature over authData ‖ clientDataHash "
                                        "does not verify") from None
        return authenticator_data.counter

    def _still_trusted(self, credential: WebAuthnCredential, record: Optional[CertificateRecord],
                       banned: Callable[[bytes, str], Optional[Ban]], now: datetime.datetime) -> None:
        if credential.ak_anchor is None or credential.ak_not_after is None:
            raise Rejected("credential-unknown", "the credential was registered before this server kept its AK "
                                                 "certificate's CA and expiry, which every assertion re-checks: "
                                                 "register it again (its counter and its mark are kept)")
        _akcert.still_trusted(credential.ak_serial, credential.ak_anchor, credential.ak_not_after,
                              self._anchors_by_key, record, banned, self._crls, now)
