"""The Privacy CA (attestation CA) of the enrolment: it checks a device's EK certificate, proves
with MakeCredential / ActivateCredential that the AK lives in the same TPM as that EK, and then
certifies the AK for the app id the device enrolled it for. App servers trust its certificate
and never see the EK."""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import os
import threading
import urllib.parse
from typing import Any, Callable, List, Optional, Sequence, Union

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509 import ObjectIdentifier

from . import _chain, _credential, _crl_der, _ek, _platform_ak, _receipt, _tpm, _wire
from ._devicecheck import DeviceCheck
from ._errors import Rejected
from ._store import Ban, CertificateRecord, Limited, MemoryStore, PendingChallenge, PublishedCRL, Store
from ._store._base import PENDING_PER_EK
from ._store._memory import StoreFull

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
#: tcg-at-tpmManufacturer, tcg-at-tpmModel, tcg-at-tpmVersion: the attributes of the TPM's
#: directoryName in an EK certificate's subjectAltName (TCG EK Credential Profile), which an AK
#: certificate of the TCG AIK profile repeats as its subjectAltName's first entry.
TCG_AT_TPM_MANUFACTURER = ObjectIdentifier("2.23.133.2.1")
TCG_AT_TPM_MODEL = ObjectIdentifier("2.23.133.2.2")
TCG_AT_TPM_VERSION = ObjectIdentifier("2.23.133.2.3")
#: The longest app id, in UTF-8 bytes (DeviceID's names: 1 to 255 bytes, no control characters).
MAX_APP_ID_BYTES = 255
#: The most certificates an enrolment request's ek_chain may hold: manufacturers' chains have one
#: to three, and every untrusted certificate multiplies the paths a chain search may try.
MAX_EK_CHAIN = 6

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


def tpm_device_of(ek_certificate: x509.Certificate) -> Optional[x509.Name]:
    """The TPM's maker, model and firmware version, from the first directoryName of the EK's (or
    a platform AK's) certificate's subjectAltName that names a manufacturer
    (tcg-at-tpmManufacturer), as a directoryName of those three attributes only: nothing else of
    that name reaches the AK certificates app servers see (a cloud's platform AK certificate may
    name the instance there). None when there is none."""
    try:
        names = ek_certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (x509.ExtensionNotFound, ValueError):
        return None
    for name in names.get_values_for_type(x509.DirectoryName):
        if isinstance(name, x509.Name) and name.get_attributes_for_oid(TCG_AT_TPM_MANUFACTURER):
            tcg = (TCG_AT_TPM_MANUFACTURER, TCG_AT_TPM_MODEL, TCG_AT_TPM_VERSION)
            kept = ([attribute for attribute in rdn if attribute.oid in tcg] for rdn in name.rdns)
            return x509.Name([x509.RelativeDistinguishedName(attributes) for attributes in kept if attributes])
    return None


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


_PENDING_STATE = "deviceid.ca-pending"
#: The window of the risk figure: enrolments of one EK for one app in the last 30 days.
RISK_WINDOW = datetime.timedelta(days=30)
_PSEUDONYM_LABEL = b"deviceid.ek-pseudonym.v1"


def derived_pseudonym_key(key: CAPrivateKey) -> bytes:
    """The pseudonym key a PrivacyCA uses when given none: HMAC-SHA-256 of a fixed label under
    the CA key's PKCS #8 DER. Rotating the CA key then changes every pseudonym (the enrolment
    limit and risk figures start again); a deployment that rotates keeps its own key instead."""
    # One class each since cryptography 3.4; the stale stubs that `apt install mypy` brings
    # (types-cryptography 3.3) keep serialization in subclasses. True at run time either way.
    assert isinstance(key, (ec.EllipticCurvePrivateKeyWithSerialization, rsa.RSAPrivateKeyWithSerialization))
    der = key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    return hmac.new(der, _PSEUDONYM_LABEL, hashlib.sha256).digest()


#: How long a revoked AK certificate stays on the CA's CRL past its expiry. RFC 5280 §3.3 lets a
#: CA drop it at expiry, and verifiers refuse an expired one themselves; the day covers a
#: verifier whose clock runs behind the CA's (by more than CLOCK_SKEW it refuses the CRL).
CRL_KEEPS_EXPIRED = datetime.timedelta(days=1)
#: How often published_crl() is rebuilt when nothing was revoked: expired entries leave, the
#: nextUpdate moves on (a day after the build: a holder that fetches hourly always has one current).
CRL_REFRESH = datetime.timedelta(hours=1)


def _crl_number(now: datetime.datetime) -> int:
    """The CRL number of a CRL made at `now` (naive UTC): microseconds since 1970."""
    delta = now - datetime.datetime(1970, 1, 1)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


class PrivacyCA:
    """An attestation CA for the enrolment protocol (wire format v1).

    `key` and `certificate` are the CA's signing key and certificate; app servers give that
    certificate to Verifier. `ek_trust_anchors` are the EK roots it accepts (TPM manufacturers'
    CAs, or swtpm's local CA in tests); `ek_intermediates` are untrusted certificates that may
    complete an EK chain. A pending challenge is answerable once, for `challenge_lifetime`;
    AK certificates are valid for `certificate_lifetime` (and never beyond the CA certificate).
    Thread-safe.

    `store` keeps the pending challenges, the certificates issued and the enrolment limit
    (docs/SERVER-STATE.md): by default a MemoryStore of this process, whose export_pending() /
    import_pending() carry the pending challenges to the next process (the command line keeps
    them in a file); an SQLiteStore or PostgresStore (open_store) shares them between workers.
    Enrolments are recorded under an EK pseudonym, HMAC-SHA-256 under `pseudonym_key` (by default
    derived_pseudonym_key of the CA key) of the EK's SubjectPublicKeyInfo, never the EK itself.

    `ek_kinds` is the CA's policy on endorsement keys: the EK kinds (TCG template names, _ek.KINDS)
    it accepts, most preferred first (by default all, in the order devices prefer them). A device
    sends the certificate of each EK it holds; the CA uses the first of its kinds among them whose
    certificate chains to a trust anchor, and the challenge says which ("ek_kind").

    `out_of_band_ek_certificates` are EK certificates the operator fetched for TPMs that keep
    none in NV (Intel PTT's and AMD fTPM's are published online, by EK public key): a request
    with `ek_public` in place of `ek_certificate` uses the one of that key, which must chain to a
    trust anchor like any other; without one it is refused ("ek-untrusted"), saying why.

    `platform_ak_anchors` are the roots of platform AK certificates the CA accepts (a cloud's vTPM
    root, such as Azure's "Azure Virtual TPM Root Certificate Authority"; `ek_intermediates` may
    hold the cloud's intermediates). A virtual TPM without an EK certificate certifies the app's
    AK with its platform AK instead (docs/HARDWARE-ID.md, "Platform attestation keys"): its request
    carries `platform_ak` and `platform_ak_certificate`, the challenge a nonce (`"route":
    "platform-ak"`), and the response that AK's TPM2_Certify of the app's AK over it. Enrolments are
    then recorded under the pseudonym of the platform AK's key. The trust is the cloud's: its CA
    certifies only restricted AKs of its vTPMs, so what they sign of TPM_GENERATED_VALUE is the TPM's.

    Each AK certificate names the app id the request gave (APP_ID_URI_PREFIX) and the AK's Name
    (AK_NAME_URI_PREFIX). Nothing proves that the AK was derived for that app id: a device may
    enrol several AKs for one app, so the store's limit bounds how many per device (the TPM: its
    EKs proven together, docs/SERVER-STATE.md) and app id in a window ("rate-limited", with
    retry_after), and risk() counts them. revoke() cuts the device off for the app id until lift().
    """

    def __init__(self, key: CAPrivateKey, certificate: x509.Certificate,
                 ek_trust_anchors: Sequence[x509.Certificate], *,
                 ek_intermediates: Sequence[x509.Certificate] = (),
                 challenge_lifetime: datetime.timedelta = datetime.timedelta(minutes=5),
                 certificate_lifetime: datetime.timedelta = datetime.timedelta(days=365),
                 max_pending: int = 100_000,
                 store: Optional[Store] = None,
                 pseudonym_key: Optional[bytes] = None,
                 ek_kinds: Optional[Sequence[str]] = None,
                 out_of_band_ek_certificates: Sequence[x509.Certificate] = (),
                 platform_ak_anchors: Sequence[x509.Certificate] = ()) -> None:
        if _spki(key.public_key()) != certificate.public_key().public_bytes(
                serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo):
            raise ValueError("the CA key is not the key of the CA certificate")
        self._key = key
        self._certificate = certificate
        self._anchors = _chain.trusted_set(ek_trust_anchors, "EK trust anchor")
        self._intermediates = _chain.trusted_set(ek_intermediates, "EK intermediate")
        self._out_of_band = _chain.trusted_set(out_of_band_ek_certificates, "out-of-band EK certificate")
        self._platform_anchors = _chain.trusted_set(platform_ak_anchors, "platform AK anchor")
        self._challenge_lifetime = challenge_lifetime
        self._certificate_lifetime = certificate_lifetime
        self._store: Store = store if store is not None else MemoryStore(max_pending=max_pending)
        self._pseudonym_key = pseudonym_key if pseudonym_key is not None else derived_pseudonym_key(key)
        names = [kind.name for kind in _ek.KINDS] if ek_kinds is None else list(ek_kinds)
        unknown = [name for name in names if _ek.kind_named(name) is None]
        if unknown or not names:
            raise ValueError(f"ek_kinds must name EK kinds of {', '.join(k.name for k in _ek.KINDS)}: "
                             f"{', '.join(map(repr, unknown)) or 'none given'}")
        self._ek_kinds = [k for k in (_ek.kind_named(name) for name in names) if k is not None]
        self._published: Optional[PublishedCRL] = None
        self._published_lock = threading.Lock()
        self._device_check = DeviceCheck(self._store, self._pseudonym_key)

    @property
    def certificate(self) -> x509.Certificate:
        """The CA certificate: what app servers pass to Verifier."""
        return self._certificate

    def challenge(self, request: Union[str, bytes]) -> str:
        """Answer an enrolment request with an enrolment challenge (both JSON).

        Checks that the request names a valid app id ("malformed": a string of 1 to 255 UTF-8
        bytes without control characters), that one of the EK certificates it offers is of a kind
        the CA accepts ("ek-mismatch"), chains to an EK trust anchor ("ek-untrusted") and holds a
        key of its kind ("ek-mismatch"), and that ak_public is the AK template ("ak-template");
        then seals a fresh 32-byte secret to that EK, bound to the AK's Name (MakeCredential), and
        remembers it and the app id under a new id.

        A request with a platform AK certificate, to a CA with platform_ak_anchors (or with no EK
        to offer), takes the platform-ak route: the certificate must chain to one of those anchors
        ("ek-untrusted") and hold an RSA (2048 bits or more) or ECC P-256/P-384 key ("ek-mismatch");
        the challenge carries a nonce for that AK to certify the app's AK over."""
        message = _wire.loads(request, _wire.ENROLMENT_REQUEST)
        app_id = check_app_id(message.get("app_id"), "malformed")
        if message.get("platform_ak_certificate") is not None and (
                self._platform_anchors or message.get("ek_certificate") is None and message.get("ek_public") is None):
            return self._platform_challenge(message, app_id)
        try:
            offered = self._offered_eks(message)
        except Rejected as e:
            if e.reason != "ek-untrusted" or message.get("platform_ak_certificate") is None:
                raise
            raise Rejected("ek-untrusted", f"{e.message}; nor does it trust the root of the platform AK the TPM offers "
                                           "(platform_ak_anchors)") from None
        chain = self._offered_chain(message)
        ak_public = _wire.bytes_field(message, "ak_public")
        ak_key_from_public(ak_public, "ak-template")
        now = _chain.utcnow()
        (kind, ek_certificate, ek_key), *others = self._usable_eks(offered, chain, now)
        pseudonym = self.ek_pseudonym(ek_key)
        self._refuse_if_banned(pseudonym, app_id)
        self._refuse_if_limited(self._store.limited(pseudonym, app_id, self._store.limit(), now), now)
        ak_name = _tpm.name_of(ak_public)
        secret = os.urandom(_SECRET_BYTES)
        # A secret for each other EK too: those the device answers are proven to be in the same
        # TPM, which is then one device for limits, risk and revocation (invariant 11).
        linked = [(other_kind, other_key, os.urandom(_SECRET_BYTES)) for other_kind, _, other_key in others]
        challenge_id = os.urandom(16).hex()
        # pending first: the EK's bound on pending challenges refuses before the sealing costs anything
        self._pend(challenge_id, PendingChallenge(
            secret, ak_public, app_id, pseudonym, now + self._challenge_lifetime, self._device_of(ek_certificate),
            tuple((k.name, self.ek_pseudonym(key), other) for k, key, other in linked)), now)
        credential = _credential.make_credential(ek_key, secret, ak_name, kind=kind)
        fields = {
            "credential_blob": _wire.b64(credential.credential_blob),
            "encrypted_secret": _wire.b64(credential.encrypted_secret),
            "ek_kind": kind.name,
        }
        for other_kind, other_key, other_secret in linked:
            sealed = _credential.make_credential(other_key, other_secret, ak_name, kind=other_kind)
            fields[f"credential_blob_{other_kind.name}"] = _wire.b64(sealed.credential_blob)
            fields[f"encrypted_secret_{other_kind.name}"] = _wire.b64(sealed.encrypted_secret)
        return _wire.dumps(_wire.ENROLMENT_CHALLENGE, {"id": challenge_id, **fields})

    def _pend(self, challenge_id: str, pending: PendingChallenge, now: datetime.datetime) -> None:
        """Keep `pending`, unless its EK has PENDING_PER_EK challenges pending ("rate-limited"): a
        saved enrolment request replays without a TPM, whatever app id it names."""
        try:
            limited = self._store.add_challenge(challenge_id, pending, now, PENDING_PER_EK)
        except StoreFull:
            raise Rejected("challenge-unknown", "too many pending enrolment challenges; try again later") from None
        if limited is not None:
            wait = max((limited.retry_at - now).total_seconds(), 0.0)
            raise Rejected("rate-limited", f"this EK has {PENDING_PER_EK} enrolment challenges pending; the next may "
                                           f"start in {wait:.0f} s", retry_after=wait)

    @staticmethod
    def _device_of(certificate: x509.Certificate) -> str:
        """The TPM's maker, model and version from `certificate` (tpm_device_of) as the RFC 4514
        text a pending challenge keeps, or "" when it has none, or one whose text does not read back (an attribute of bytes that
        are not UTF-8): the AK certificate then names no TPM, as 0.3's did, rather than failing
        the enrolment at its last step."""
        device = tpm_device_of(certificate)
        if device is None:
            return ""
        text = device.rfc4514_string()
        try:
            _tpm_device_name(text)
        except ValueError:
            return ""
        return text

    def _platform_challenge(self, message: Any, app_id: str) -> str:
        """The challenge of the platform-ak route: a nonce (nonce_of a fresh secret, which the
        pending challenge keeps) for the platform AK to certify the AK over."""
        kind = _platform_ak.check_kind(message.get("platform_ak"))
        now = _chain.utcnow()
        certificate = self._platform_certificate(_wire.bytes_field(message, "platform_ak_certificate"))
        key = _platform_ak.platform_key(kind, certificate, self._platform_anchors, self._intermediates, now)
        ak_public = _wire.bytes_field(message, "ak_public")
        ak_key_from_public(ak_public, "ak-template")
        pseudonym = self.ek_pseudonym(key)
        self._refuse_if_banned(pseudonym, app_id)
        self._refuse_if_limited(self._store.limited(pseudonym, app_id, self._store.limit(), now), now)
        secret = os.urandom(_SECRET_BYTES)
        challenge_id = os.urandom(16).hex()
        self._pend(challenge_id, PendingChallenge(secret, ak_public, app_id, pseudonym, now + self._challenge_lifetime,
                                                  self._device_of(certificate)), now)
        return _wire.dumps(_wire.ENROLMENT_CHALLENGE, {
            "id": challenge_id, "route": "platform-ak", "platform_ak": kind,
            "nonce": _wire.b64(_platform_ak.nonce_of(secret)),
        })

    @staticmethod
    def _platform_certificate(der: bytes) -> x509.Certificate:
        try:
            return _chain.load_der(der)
        except _chain.ChainError as e:
            raise Rejected("malformed", f"the platform AK certificate: {e}") from None

    def _offered_eks(self, message: Any) -> List[tuple[_ek.EKKind, x509.Certificate]]:
        """The EK certificates a request offers: `ek_certificate` of kind `ek_kind` (L-1 where a
        device of wire format v1 before ek_kind sends none: its key decides), or in its place the
        out-of-band certificate of `ek_public`'s key, and `ek_certificate_<kind>` for each other
        kind."""
        name = message.get("ek_kind")
        if name is not None and (not isinstance(name, str) or _ek.kind_named(name) is None):
            raise Rejected("ek-mismatch", f"ek_kind {name!r} is no EK kind this CA knows "
                                          f"({', '.join(k.name for k in _ek.KINDS)})")
        first = _ek.kind_named(name) if isinstance(name, str) else None
        ek_public = _wire.optional_bytes_field(message, "ek_public")
        if ek_public is not None and message.get("ek_certificate") is None:
            offered: List[tuple[Optional[_ek.EKKind], bytes]] = [(first, self._out_of_band_certificate(ek_public))]
        else:
            offered = [(first, _wire.bytes_field(message, "ek_certificate"))]
        for kind in _ek.KINDS:
            other = _wire.optional_bytes_field(message, f"ek_certificate_{kind.name}")
            if other is not None and kind is not first:
                offered.append((kind, other))
        out: List[tuple[_ek.EKKind, x509.Certificate]] = []
        for offered_kind, der in offered:
            try:
                certificate = _chain.load_der(der)
                key = certificate.public_key()
            except _chain.ChainError as e:
                of = "" if offered_kind is None else " of " + offered_kind.name
                raise Rejected("malformed", f"the EK certificate{of}: {e}") from None
            except (ValueError, UnsupportedAlgorithm) as e:
                raise Rejected("ek-mismatch", f"the EK certificate's key does not parse: {e}") from None
            named = offered_kind if offered_kind is not None else _ek.kind_of_key(key)
            if named is None:
                raise Rejected("ek-mismatch", "the EK certificate's key is of no EK kind this CA knows "
                                              f"({', '.join(k.describe() for k in _ek.KINDS)})")
            out.append((named, certificate))
        return out

    def _out_of_band_certificate(self, ek_public: bytes) -> bytes:
        """The DER of the out-of-band EK certificate of `ek_public`'s key, for a TPM that keeps
        none in NV: "malformed" when ek_public is not an EK's TPMT_PUBLIC, "ek-untrusted" when
        this CA was given no certificate for that key."""
        try:
            key = _ek.key_of_public(ek_public)
        except ValueError as e:
            raise Rejected("malformed", f"ek_public: {e}") from None
        spki = _spki(key)
        for certificate in self._out_of_band:
            try:
                theirs = certificate.public_key().public_bytes(serialization.Encoding.DER,
                                                              serialization.PublicFormat.SubjectPublicKeyInfo)
            except (ValueError, UnsupportedAlgorithm):
                continue
            if theirs == spki:
                return certificate.public_bytes(serialization.Encoding.DER)
        raise Rejected("ek-untrusted", "the TPM keeps no EK certificate in NV (a firmware TPM whose certificate is "
                                       "published online, or a virtual TPM) and this CA was given none for its EK out "
                                       "of band (out_of_band_ek_certificates)")

    @staticmethod
    def _offered_chain(message: Any) -> List[x509.Certificate]:
        """`ek_chain`: the DER certificates of the TPM's EK chain indices (0x01c00100-0x01c001ff),
        one after another, untrusted like ek_intermediates; at most MAX_EK_CHAIN ("malformed")."""
        data = _wire.optional_bytes_field(message, "ek_chain")
        try:
            parts = _chain.split_der(data or b"")
            if len(parts) > MAX_EK_CHAIN:
                raise Rejected("malformed", f"ek_chain holds {len(parts)} certificates; at most {MAX_EK_CHAIN}")
            return [_chain.load_der(part) for part in parts]
        except _chain.ChainError as e:
            raise Rejected("malformed", f"ek_chain: {e}") from None

    def _usable_eks(self, offered: List[tuple[_ek.EKKind, x509.Certificate]], chain: List[x509.Certificate],
                    now: datetime.datetime
                    ) -> List[tuple[_ek.EKKind, x509.Certificate, Union[rsa.RSAPublicKey, ec.EllipticCurvePublicKey]]]:
        """The EKs offered, of the CA's kinds in its order, whose certificates chain (through the
        CA's intermediates and the request's `chain`) and hold a key of their kind; the first is
        the one the challenge is for. "ek-untrusted" (or "ek-mismatch") for the first that fails
        when none passes, and "ek-mismatch" when the request offers none of the CA's kinds."""
        by_kind = {kind.name: certificate for kind, certificate in reversed(offered)}
        usable: List[tuple[_ek.EKKind, x509.Certificate, Union[rsa.RSAPublicKey, ec.EllipticCurvePublicKey]]] = []
        first_refusal: Optional[Rejected] = None
        for kind in self._ek_kinds:
            certificate = by_kind.get(kind.name)
            if certificate is None:
                continue
            try:
                _chain.verify_chain(certificate, self._anchors, [*self._intermediates, *chain], at=now)
            except _chain.ChainError as e:
                first_refusal = first_refusal or Rejected(
                    "ek-untrusted", f"the EK certificate of kind {kind.name} does not chain to a trusted EK root: {e}")
                continue
            key = certificate.public_key()
            if not kind.holds(key) or not isinstance(key, (rsa.RSAPublicKey, ec.EllipticCurvePublicKey)):
                first_refusal = first_refusal or Rejected(
                    "ek-mismatch", f"the EK certificate offered as {kind.describe()} holds another kind of key")
                continue
            usable.append((kind, certificate, key))
        if usable:
            return usable
        if first_refusal is not None:
            raise first_refusal
        raise Rejected("ek-mismatch", f"the device offers EKs of kind {', '.join(k.name for k, _ in offered)}; "
                                      f"this CA accepts {', '.join(k.name for k in self._ek_kinds)}")

    def finish(self, response: Union[str, bytes]) -> str:
        """Answer an enrolment response with an AK certificate message (both JSON).

        The challenge id must be pending ("challenge-unknown"). The credential must be the sealed
        secret ("credential"). The EK must be under the store's limit for this app id
        ("rate-limited"), counted with this enrolment atomically, whatever the number of workers.
        The challenge is used up with the certificate recorded, in one transaction: a response
        refused leaves it pending (docs/SERVER-STATE.md, "Spending"). The answer is kept for one
        challenge lifetime: the same response again (a retry after a 503) gets it, nothing
        counted twice.

        A response of the platform-ak route carries, in place of the credential, the platform AK's
        certificate (whose key must be the request's: "credential" otherwise), its
        TPM2_Certify of the AK (certify_attest) and the signature (certify_signature): valid for the
        certificate's key ("signature"), over the challenge's nonce ("nonce-mismatch"), of the AK
        the request sent ("ak-mismatch")."""
        message = _wire.loads(response, _wire.ENROLMENT_RESPONSE)
        challenge_id = _wire.text_field(message, "id")
        certification = None if message.get("certify_attest") is None else (
            _wire.bytes_field(message, "certify_attest"), _wire.bytes_field(message, "certify_signature"),
            _wire.bytes_field(message, "platform_ak_certificate"))
        if certification is not None and message.get("credential") is not None:
            raise Rejected("malformed", "the response carries both a credential (the EK route) and certify_attest "
                                        "(the platform-ak route)")
        credential = b"" if certification is not None else _wire.bytes_field(message, "credential")
        now = _chain.utcnow()
        # The receipt's key: the body's digest. Repeating it gives nothing away (docs/SERVER-STATE.md, "Retries").
        receipt_key = hashlib.sha256(b"enrolmentFinish\0" + (response if isinstance(response, bytes)
                                                               else response.encode("utf-8", "surrogatepass"))).digest()
        # One transaction, the request's last use of the store: the challenge is taken, checked and
        # answered with a certificate recorded under the limit, or nothing of it happened (invariant 4).
        with self._store.atomic():
            pending = self._store.take_challenge(challenge_id, now)
            if pending is None:
                kept = self._store.receipt(receipt_key, now)
                if kept is not None:  # the retry of a finish whose answer was lost
                    return kept.decode("utf-8")
                raise Rejected("challenge-unknown",
                               "no pending enrolment challenge has this id (unknown, expired or used)")
            if certification is not None:
                attest, signature, platform_der = certification
                # the key the challenge checked the chain of, by its pseudonym: no anchors needed here
                key = _platform_ak.key_of(self._platform_certificate(platform_der))
                if not hmac.compare_digest(self.ek_pseudonym(key), pending.ek_pseudonym):
                    raise Rejected("credential", "the response is not from the platform AK the enrolment request named")
                _platform_ak.verify_signature(key, attest, signature)
                _platform_ak.check_certification(attest, _platform_ak.nonce_of(pending.secret),
                                                 _tpm.name_of(pending.ak_public))
            elif not hmac.compare_digest(credential, pending.secret):
                raise Rejected("credential",
                               "the credential is wrong: the AK was not activated by the TPM holding the EK")
            self._link(pending, message)
            certificate = self._issue(pending.ak_public, pending.app_id, pending.tpm_device, now)
            record = CertificateRecord(certificate.serial_number, pending.ek_pseudonym, pending.app_id,
                                       _tpm.name_of(pending.ak_public), now, _chain.not_after(certificate))
            refusal = self._store.add_certificate(record, self._store.limit())
            if isinstance(refusal, Ban):
                raise self._revoked(refusal)
            self._refuse_if_limited(refusal, now)
            answer = _wire.dumps(_wire.AK_CERTIFICATE, {
                "certificate": _wire.b64(certificate.public_bytes(serialization.Encoding.DER)),
            })
            self._store.add_receipt(receipt_key, answer.encode("utf-8"), now + self._challenge_lifetime)
        return answer

    def export_pending(self) -> str:
        """The pending challenges (their secrets, AK public areas, app ids and expiry times) as
        JSON text, for import_pending() in another process. It is secret: whoever reads it can
        answer the challenges, so keep it as private as the CA key."""
        store = self._memory_store("export_pending")
        store.purge(_chain.utcnow())
        pending = {
            challenge_id: {"secret": _wire.b64(p.secret), "ak_public": _wire.b64(p.ak_public),
                           "app_id": p.app_id, "ek_pseudonym": _wire.b64(p.ek_pseudonym),
                           "expires": p.expires.isoformat() + "Z", "tpm_device": p.tpm_device}
            for challenge_id, p in store.challenges().items()
        }
        return json.dumps({"v": _wire.VERSION, "type": _PENDING_STATE, "pending": pending}, separators=(",", ":"))

    def import_pending(self, state: Union[str, bytes]) -> None:
        """Add the pending challenges of export_pending()'s `state` (expired ones are dropped);
        ValueError if it is not such a state. Only for the default MemoryStore (TypeError otherwise)."""
        store = self._memory_store("import_pending")
        try:
            message = _wire.loads(state, _PENDING_STATE)
            entries = message.get("pending")
            if not isinstance(entries, dict):
                raise ValueError("no \"pending\" object")
            loaded = {str(i): self._pending_of(e) for i, e in entries.items()}
        except Rejected as e:
            raise ValueError(f"not a PrivacyCA pending state: {e}") from None
        store.merge_challenges(loaded)
        store.purge(_chain.utcnow())

    @staticmethod
    def _pending_of(entry: Any) -> PendingChallenge:
        if not isinstance(entry, dict):
            raise Rejected("malformed", "a pending challenge is not an object")
        ak_public = _wire.bytes_field(entry, "ak_public")
        ak_key_from_public(ak_public, "malformed")
        expires = _wire.text_field(entry, "expires")
        # 0.3's state files have no pseudonym: such a challenge is finished without one
        pseudonym = _wire.optional_bytes_field(entry, "ek_pseudonym") or b""
        # nor a TPM directoryName (0.3's, and 1.0's before AIK-profile certificates)
        device = entry.get("tpm_device", "")
        try:
            if not isinstance(device, str) or device and _tpm_device_name(device) is None:
                raise ValueError("not text")
        except ValueError:
            raise Rejected("malformed", "a pending challenge's tpm_device is not a TPM's directoryName") from None
        return PendingChallenge(_wire.bytes_field(entry, "secret"), ak_public, check_app_id(entry.get("app_id")),
                                pseudonym, parse_utc(expires), device)

    def _memory_store(self, operation: str) -> MemoryStore:
        if not isinstance(self._store, MemoryStore):
            raise TypeError(f"{operation}() is for a PrivacyCA on its own MemoryStore; this one shares "
                            f"{type(self._store).__name__}")
        return self._store

    def _link(self, pending: PendingChallenge, response: Any) -> None:
        """Link the EKs whose sealed secrets the response answers (`credential_<kind>`) to the
        challenge's EK: the TPM that activated them all holds them all (invariant 11). A wrong
        or missing answer links nothing and refuses nothing: the challenge's own EK decided."""
        proven = [pseudonym for kind, pseudonym, secret in pending.linked
                  if hmac.compare_digest(_wire.optional_bytes_field(response, f"credential_{kind}") or b"", secret)]
        if pending.ek_pseudonym and proven:
            self._store.link([pending.ek_pseudonym, *proven])

    @staticmethod
    def _revoked(ban: Ban) -> Rejected:
        return Rejected("revoked", f"this device was revoked for this app id (with the AK certificate {ban.serial:x}: "
                                   f"{ban.reason or 'no reason given'}); it may enrol again once an operator lifts "
                                   "the revocation")

    def _refuse_if_banned(self, pseudonym: bytes, app_id: str) -> None:
        ban = self._store.banned(pseudonym, app_id)
        if ban is not None:
            raise self._revoked(ban)

    @staticmethod
    def _refuse_if_limited(limited: Optional[Limited], now: datetime.datetime) -> None:
        if limited is not None:
            wait = max((limited.retry_at - now).total_seconds(), 0.0)
            raise Rejected("rate-limited", f"this TPM has enrolled as many AKs for this app id as the limit allows; "
                                           f"the next enrolment may start in {wait:.0f} s", retry_after=wait)

    # -- the fleet: pseudonyms, risk, revocation -------------------------------------------------

    @property
    def store(self) -> Store:
        """Where this CA keeps its pending challenges, certificates and limit."""
        return self._store

    def ek_pseudonym(self, ek_key: Union[rsa.RSAPublicKey, ec.EllipticCurvePublicKey]) -> bytes:
        """The pseudonym this CA records an EK's enrolments under (HMAC-SHA-256 of its SPKI)."""
        return hmac.new(self._pseudonym_key, _spki(ek_key), hashlib.sha256).digest()

    def risk(self, serial: int) -> Optional[int]:
        """How many AK certificates this CA issued in the last 30 days (RISK_WINDOW) for the app id
        and device (the TPM: all its EKs linked so far) of the certificate with this serial number,
        itself included; None if this CA did
        not issue it. It tells an app server how often one TPM re-enrolled for its app, without
        the EK."""
        record = self._store.certificate(serial)
        if record is None:
            return None
        return self._store.enrolments(record.ek_pseudonym, record.app_id, _chain.utcnow() - RISK_WINDOW)

    @property
    def device_check(self) -> DeviceCheck:
        """The tenants' device bits and activity on this CA's store (DeviceCheck for Linux), keyed
        by tenant pseudonyms under this CA's pseudonym key."""
        return self._device_check

    def risk_receipt(self, app_id: str, risk: int, ak_name: bytes, serial: int) -> str:
        """A risk receipt (compact JWS signed with the CA key; _receipt) of `risk` for the AK of
        this Name and certificate serial, made now."""
        return _receipt.sign(self._key, app_id, risk, ak_name, serial, _chain.utcnow())

    def refresh_receipt(self, receipt: str, app_ids: Optional[Sequence[str]] = None) -> str:
        """`receipt` itself before its nbf; after it, a new receipt with the figure now. Rejected
        "receipt-invalid" unless this CA signed it, "tenant-mismatch" when `app_ids` is given and
        its app id is not among them, "receipt-expired" once it or its AK certificate expired,
        "revoked" once that certificate is."""
        claims = _receipt.verify(receipt, [self._certificate])
        if app_ids is not None and claims["app_id"] not in app_ids:
            raise Rejected("tenant-mismatch", "the receipt is for an app id the tenant does not own")
        try:
            serial, ak_name = int(claims["ak_certificate_serial"], 16), bytes.fromhex(claims["ak_name"])
        except (TypeError, ValueError):
            raise Rejected("receipt-invalid", "the receipt's AK claims are not hex") from None
        record = self._store.certificate(serial)
        now = _chain.utcnow()
        if not _receipt.due(claims, now, None if record is None else record.not_after):
            return receipt
        assert record is not None  # due() refuses a receipt whose certificate the store lacks
        if record.revoked is not None:
            raise Rejected("revoked", f"the AK certificate {serial:x} was revoked")
        risk = self._store.enrolments(record.ek_pseudonym, record.app_id, now - RISK_WINDOW)
        return _receipt.sign(self._key, record.app_id, risk, ak_name, serial, now)

    def revoke(self, serial: int, reason: str = "unspecified") -> bool:
        """Revoke the device of the AK certificate with this serial number for its app id (an
        operator's action; docs/SERVER-STATE.md, invariant 6): that certificate and every other
        of the same TPM and app id are revoked (crl() lists them; Verifiers on this store reject
        their evidence, registrations and assertions: "revoked"), and the TPM cannot enrol for the
        app id again until lift(). False if this CA did not issue it or all was revoked before."""
        return self._store.revoke(serial, reason, _chain.utcnow())

    def lift(self, serial: int) -> int:
        """Let the device of this certificate enrol for its app id again (its revoked
        certificates stay revoked); how many bans were lifted (0: none, or an unknown serial)."""
        return self._store.lift(serial)

    def crl(self, *, next_update: datetime.timedelta = datetime.timedelta(days=1)) -> x509.CertificateRevocationList:
        """A CRL (RFC 5280) of the revoked AK certificates not expired a day ago (CRL_KEEPS_EXPIRED),
        signed by the CA key, valid for `next_update` (at least a minute: its lastUpdate is a
        minute back, for clocks that differ)."""
        return x509.load_der_x509_crl(self._crl_der(next_update))

    def _crl_der(self, next_update: datetime.timedelta) -> bytes:
        now = _chain.utcnow()
        builder = (x509.CertificateRevocationListBuilder().issuer_name(self._certificate.subject)
                   .last_update(now - datetime.timedelta(minutes=1)).next_update(now + next_update))
        builder = builder.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
                                        critical=False)
        # RFC 5280 §5.2.3: a CRL number that grows, so a holder tells the newer of two CRLs made
        # in one second (CRL times have seconds only). Microseconds since 1970: every worker
        # and host makes one without sharing a sequence.
        builder = builder.add_extension(x509.CRLNumber(_crl_number(now)), critical=False)
        # The entries by hand (_crl_der): cryptography's builder took 94 s for 150,000.
        empty = builder.sign(self._key, hashes.SHA256()).public_bytes(serialization.Encoding.DER)
        return _crl_der.with_entries(empty, self._store.revoked(now - CRL_KEEPS_EXPIRED), self._key)

    def published_crl(self) -> bytes:
        """The DER CRL that `GET /v1/crl` serves: crl(), built once per revocation generation of
        the store (and when the one kept is CRL_REFRESH old) by the first worker that needs it,
        kept in the store for every other worker and host (a read of 4 MB at 100,000 entries,
        where a build takes a second), and by each process. Each call reads the generation (one
        row), so no CRL it returns after a revocation committed lacks it; an entry leaves it at
        most CRL_REFRESH after crl() would drop it; its nextUpdate is a day after it was built."""
        generation = self._store.revocation_generation()

        def current(crl: Optional[PublishedCRL]) -> bool:
            return (crl is not None and crl.generation >= generation
                    and _chain.utcnow() - crl.built < CRL_REFRESH)

        held = self._published
        if held is not None and current(held):
            return held.der
        with self._published_lock:  # one build per process at a time; the others wait for it
            held = self._published
            if held is None or not current(held):
                held = self._store.published_crl()
                if held is None or not current(held):
                    # the generation read before the list: the list holds at least its revocations
                    held = PublishedCRL(generation, _chain.utcnow(), self._crl_der(datetime.timedelta(days=1)))
                    self._store.publish_crl(held)
                self._published = held
            return held.der

    def _issue(self, ak_public: bytes, app_id: str, tpm_device: str, now: datetime.datetime) -> x509.Certificate:
        """An AK certificate of the TCG AIK profile (TCG EK Credential Profile 2.0 §3.2.x; WebAuthn
        §8.3.1): an empty subject, so a critical subjectAltName whose first entry is the EK
        certificate's TPM directoryName, then the AK's Name and the app id as URIs."""
        ak_key = ak_key_from_public(ak_public, "ak-template")
        ak_name = _tpm.name_of(ak_public)
        not_after = min(now + self._certificate_lifetime, _chain.not_after(self._certificate))
        device: List[x509.GeneralName] = [x509.DirectoryName(_tpm_device_name(tpm_device))] if tpm_device else []
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([]))
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
            .add_extension(x509.SubjectAlternativeName(device + [
                x509.UniformResourceIdentifier(AK_NAME_URI_PREFIX + ak_name.hex()),
                x509.UniformResourceIdentifier(app_id_uri(app_id)),
            ]), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(ak_key), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False)
        )
        return builder.sign(self._key, hashes.SHA256())


#: x509.Name.from_rfc4514_string (cryptography 37 and later), through getattr: the stale stubs
#: `apt install mypy` may bring (types-cryptography 3.3) predate it.
_name_from_rfc4514: Callable[[str], Any] = getattr(x509.Name, "from_rfc4514_string")


def _tpm_device_name(text: str) -> x509.Name:
    """The x509.Name of the RFC 4514 text a pending challenge keeps; ValueError for another."""
    name = _name_from_rfc4514(text)
    if not isinstance(name, x509.Name) or not name.get_attributes_for_oid(TCG_AT_TPM_MANUFACTURER):
        raise ValueError("no tcg-at-tpmManufacturer")
    return name
