"""The Privacy CA (attestation CA) of the enrolment: it checks a device's EK certificate, proves
with MakeCredential / ActivateCredential that the AK lives in the same TPM as that EK, and then
certifies the AK for the app id the device enrolled it for. App servers trust its certificate
and never see the EK."""

from __future__ import annotations

import datetime
import hmac
import json
import os
import threading
import urllib.parse
from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence, Union

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509 import ObjectIdentifier
from cryptography.x509.oid import NameOID

from . import _chain, _credential, _tpm, _wire
from ._errors import Rejected

#: Private keys a PrivacyCA can sign AK certificates with.
CAPrivateKey = Union[ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey]

#: tcg-kp-AIKCertificate, the extended key usage of an attestation key certificate.
TCG_KP_AIK_CERTIFICATE = ObjectIdentifier("2.23.133.8.3")
#: An AK certificate names the AK by a subjectAltName URI of this prefix followed by the AK's
#: Name in lowercase hex (0x000b ‖ SHA-256 of its TPMT_PUBLIC).
AK_NAME_URI_PREFIX = "urn:deviceid:ak-name:"
#: An AK certificate names the app id its AK was enrolled for by a second subjectAltName URI:
#: this prefix followed by the app id in UTF-8, percent-encoded (RFC 3986, uppercase hex) for
#: every byte outside the unreserved characters A-Z a-z 0-9 - . _ ~
APP_ID_URI_PREFIX = "urn:deviceid:app-id:"
#: The subject common name of every AK certificate.
AK_SUBJECT = "deviceid attestation key"
#: The longest app id, in UTF-8 bytes (DeviceID's names: 1 to 255 bytes, no control characters).
MAX_APP_ID_BYTES = 255

_EK_BITS = 2048
_EK_EXPONENT = 65537
_SECRET_BYTES = 32


def check_app_id(value: object, reason: str = "malformed") -> str:
    """`value` if it is a valid app id, as DeviceID's devices accept them: a string of 1 to 255
    bytes in UTF-8 without control characters (C0 U+0000–U+001F, DEL U+007F, C1 U+0080–U+009F);
    otherwise Rejected(reason)."""
    if not isinstance(value, str):
        raise Rejected(reason, "the app id is missing or not a string")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise Rejected(reason, "the app id is not valid Unicode (it has a lone surrogate)") from None
    if not 1 <= size <= MAX_APP_ID_BYTES:
        raise Rejected(reason, f"the app id is {size} bytes long in UTF-8, not 1 to {MAX_APP_ID_BYTES}")
    if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in value):
        raise Rejected(reason, "the app id contains a control character")
    return value


def app_id_uri(app_id: str) -> str:
    """The subjectAltName URI that names `app_id` in an AK certificate: APP_ID_URI_PREFIX followed
    by the app id's UTF-8 bytes, each outside the RFC 3986 unreserved set as %XX (uppercase)."""
    return APP_ID_URI_PREFIX + urllib.parse.quote(app_id, safe="", encoding="utf-8", errors="strict")


def app_id_of_uri(uri: str) -> Optional[str]:
    """The app id an app-id URI names, or None if `uri` is not one in the canonical form
    app_id_uri() writes, or names no valid app id."""
    if not uri.startswith(APP_ID_URI_PREFIX):
        return None
    try:
        app_id = urllib.parse.unquote(uri[len(APP_ID_URI_PREFIX):], encoding="utf-8", errors="strict")
        check_app_id(app_id)
    except (UnicodeDecodeError, Rejected):
        return None
    return app_id if app_id_uri(app_id) == uri else None


def parse_utc(text: str) -> datetime.datetime:
    """A naive UTC datetime from ISO 8601 text as this package writes it (…Z); Rejected("malformed")
    if it is none."""
    try:
        when = datetime.datetime.fromisoformat(text[:-1] if text.endswith("Z") else text)
    except ValueError:
        raise Rejected("malformed", f"{text!r} is not an ISO 8601 time") from None
    if when.tzinfo is not None:
        try:
            when = when.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        except OverflowError:  # 0001-01-01T00:00:00+01:00 is before year 1 in UTC
            raise Rejected("malformed", f"{text!r} is outside the years 1 to 9999 in UTC") from None
    return when


def _spki(key: Union[rsa.RSAPublicKey, ec.EllipticCurvePublicKey]) -> bytes:
    return key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def ak_key_from_public(ak_public: bytes, reason: str) -> ec.EllipticCurvePublicKey:
    """The P-256 key of a marshalled AK TPMT_PUBLIC, which must be the frozen AK template
    (restricted ECDSA P-256 signing key, attributes 0x00050472) with any unique point;
    otherwise Rejected(reason)."""
    x, y = _tpm.ecc_point_of_template(ak_public, _tpm.AK_PREFIX, reason, "the AK public area")
    try:
        return ec.EllipticCurvePublicNumbers(int.from_bytes(x, "big"), int.from_bytes(y, "big"),
                                             ec.SECP256R1()).public_key()
    except ValueError:
        raise Rejected(reason, "the AK's public point is not on P-256") from None


@dataclass(frozen=True)
class _Pending:
    secret: bytes
    ak_public: bytes
    app_id: str
    expires: datetime.datetime


_PENDING_STATE = "deviceid.ca-pending"


class PrivacyCA:
    """An attestation CA for the enrolment protocol (wire format v1).

    `key` and `certificate` are the CA's signing key and certificate; app servers give that
    certificate to Verifier. `ek_trust_anchors` are the EK roots it accepts (TPM manufacturers'
    CAs, or swtpm's local CA in tests); `ek_intermediates` are untrusted certificates that may
    complete an EK chain. A pending challenge is answerable once, for `challenge_lifetime`;
    AK certificates are valid for `certificate_lifetime` (and never beyond the CA certificate).
    Thread-safe. export_pending() / import_pending() carry the pending challenges from one
    process to the next (the command line keeps them in a file).

    Each AK certificate names the app id the request gave (APP_ID_URI_PREFIX) and the AK's Name
    (AK_NAME_URI_PREFIX). Nothing proves that the AK was derived for that app id: a device may
    enrol any number of AKs for one app. A deployment that wants to bound that must record or
    rate-limit enrolments per EK; this class does neither (the EK certificate is in the request
    the caller passes to challenge()).
    """

    def __init__(self, key: CAPrivateKey, certificate: x509.Certificate,
                 ek_trust_anchors: Sequence[x509.Certificate], *,
                 ek_intermediates: Sequence[x509.Certificate] = (),
                 challenge_lifetime: datetime.timedelta = datetime.timedelta(minutes=5),
                 certificate_lifetime: datetime.timedelta = datetime.timedelta(days=365),
                 max_pending: int = 100_000) -> None:
        if _spki(key.public_key()) != certificate.public_key().public_bytes(
                serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo):
            raise ValueError("the CA key is not the key of the CA certificate")
        self._key = key
        self._certificate = certificate
        self._anchors = _chain.trusted_set(ek_trust_anchors, "EK trust anchor")
        self._intermediates = _chain.trusted_set(ek_intermediates, "EK intermediate")
        self._challenge_lifetime = challenge_lifetime
        self._certificate_lifetime = certificate_lifetime
        self._max_pending = max_pending
        self._pending: Dict[str, _Pending] = {}
        self._lock = threading.Lock()

    @property
    def certificate(self) -> x509.Certificate:
        """The CA certificate: what app servers pass to Verifier."""
        return self._certificate

    def challenge(self, request: Union[str, bytes]) -> str:
        """Answer an enrolment request with an enrolment challenge (both JSON).

        Checks that the request names a valid app id ("malformed": a string of 1 to 255 UTF-8
        bytes without control characters), that the EK certificate chains to an EK trust anchor
        ("ek-untrusted") and holds an RSA 2048 key ("ek-mismatch"), and that ak_public is the AK
        template ("ak-template"); then seals a fresh 32-byte secret to the EK, bound to the AK's
        Name (MakeCredential), and remembers it and the app id under a new id."""
        message = _wire.loads(request, _wire.ENROLMENT_REQUEST)
        app_id = check_app_id(message.get("app_id"), "malformed")
        ek_der = _wire.bytes_field(message, "ek_certificate")
        ak_public = _wire.bytes_field(message, "ak_public")
        try:
            ek_certificate = _chain.load_der(ek_der)
        except _chain.ChainError as e:
            raise Rejected("malformed", f"ek_certificate: {e}") from None
        ak_key_from_public(ak_public, "ak-template")
        now = _chain.utcnow()
        try:
            _chain.verify_chain(ek_certificate, self._anchors, self._intermediates, at=now)
        except _chain.ChainError as e:
            raise Rejected("ek-untrusted", f"the EK certificate does not chain to a trusted EK root: {e}") from None
        try:
            ek_key = ek_certificate.public_key()
        except (ValueError, UnsupportedAlgorithm) as e:
            raise Rejected("ek-mismatch", f"the EK certificate's key does not parse: {e}") from None
        if not (isinstance(ek_key, rsa.RSAPublicKey) and ek_key.key_size == _EK_BITS
                and ek_key.public_numbers().e == _EK_EXPONENT):
            raise Rejected("ek-mismatch", "the EK certificate's key is not an RSA 2048 key with exponent 65537 "
                                          "(the standard EK, template L-1)")
        ak_name = _tpm.name_of(ak_public)
        secret = os.urandom(_SECRET_BYTES)
        credential = _credential.make_credential(ek_key, secret, ak_name)
        challenge_id = os.urandom(16).hex()
        with self._lock:
            self._expire(now)
            if len(self._pending) >= self._max_pending:
                raise Rejected("challenge-unknown", "too many pending enrolment challenges; try again later")
            self._pending[challenge_id] = _Pending(secret, ak_public, app_id, now + self._challenge_lifetime)
        return _wire.dumps(_wire.ENROLMENT_CHALLENGE, {
            "id": challenge_id,
            "credential_blob": _wire.b64(credential.credential_blob),
            "encrypted_secret": _wire.b64(credential.encrypted_secret),
        })

    def finish(self, response: Union[str, bytes]) -> str:
        """Answer an enrolment response with an AK certificate message (both JSON).

        The challenge id must be pending ("challenge-unknown"); it is used up by this call,
        whatever its outcome. The credential must be the sealed secret ("credential")."""
        message = _wire.loads(response, _wire.ENROLMENT_RESPONSE)
        challenge_id = _wire.text_field(message, "id")
        credential = _wire.bytes_field(message, "credential")
        now = _chain.utcnow()
        with self._lock:
            self._expire(now)
            pending = self._pending.pop(challenge_id, None)
        if pending is None:
            raise Rejected("challenge-unknown", "no pending enrolment challenge has this id (unknown, expired or used)")
        if not hmac.compare_digest(credential, pending.secret):
            raise Rejected("credential", "the credential is wrong: the AK was not activated by the TPM holding the EK")
        certificate = self._issue(pending.ak_public, pending.app_id, now)
        return _wire.dumps(_wire.AK_CERTIFICATE, {
            "certificate": _wire.b64(certificate.public_bytes(serialization.Encoding.DER)),
        })

    def export_pending(self) -> str:
        """The pending challenges (their secrets, AK public areas, app ids and expiry times) as
        JSON text, for import_pending() in another process. It is secret: whoever reads it can
        answer the challenges, so keep it as private as the CA key."""
        now = _chain.utcnow()
        with self._lock:
            self._expire(now)
            pending = {
                challenge_id: {"secret": _wire.b64(p.secret), "ak_public": _wire.b64(p.ak_public),
                               "app_id": p.app_id, "expires": p.expires.isoformat() + "Z"}
                for challenge_id, p in self._pending.items()
            }
        return json.dumps({"v": _wire.VERSION, "type": _PENDING_STATE, "pending": pending}, separators=(",", ":"))

    def import_pending(self, state: Union[str, bytes]) -> None:
        """Add the pending challenges of export_pending()'s `state` (expired ones are dropped);
        ValueError if it is not such a state."""
        try:
            message = _wire.loads(state, _PENDING_STATE)
            entries = message.get("pending")
            if not isinstance(entries, dict):
                raise ValueError("no \"pending\" object")
            loaded = {str(i): self._pending_of(e) for i, e in entries.items()}
        except Rejected as e:
            raise ValueError(f"not a PrivacyCA pending state: {e}") from None
        now = _chain.utcnow()
        with self._lock:
            self._pending.update(loaded)
            self._expire(now)

    @staticmethod
    def _pending_of(entry: Any) -> _Pending:
        if not isinstance(entry, dict):
            raise Rejected("malformed", "a pending challenge is not an object")
        ak_public = _wire.bytes_field(entry, "ak_public")
        ak_key_from_public(ak_public, "malformed")
        expires = _wire.text_field(entry, "expires")
        return _Pending(_wire.bytes_field(entry, "secret"), ak_public, check_app_id(entry.get("app_id")),
                        parse_utc(expires))

    def _expire(self, now: datetime.datetime) -> None:
        for challenge_id in [i for i, p in self._pending.items() if p.expires < now]:
            del self._pending[challenge_id]

    def _issue(self, ak_public: bytes, app_id: str, now: datetime.datetime) -> x509.Certificate:
        ak_key = ak_key_from_public(ak_public, "ak-template")
        ak_name = _tpm.name_of(ak_public)
        not_after = min(now + self._certificate_lifetime, _chain.not_after(self._certificate))
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, AK_SUBJECT)]))
            .issuer_name(self._certificate.subject)
            .public_key(ak_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=1))
            .not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([TCG_KP_AIK_CERTIFICATE]), critical=False)
            .add_extension(x509.SubjectAlternativeName([
                x509.UniformResourceIdentifier(AK_NAME_URI_PREFIX + ak_name.hex()),
                x509.UniformResourceIdentifier(app_id_uri(app_id)),
            ]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(ak_key), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False)
        )
        return builder.sign(self._key, hashes.SHA256())
