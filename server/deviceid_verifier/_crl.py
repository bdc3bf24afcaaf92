"""The Privacy CAs' CRLs as an app server holds them when it does not share a CA's store: one
current CRL per trusted CA, loaded from what the CA publishes (`GET /v1/crl`, `python3 -m
deviceid_verifier crl`), and the check of an AK certificate against its issuer's.

A fleet's CRL holds 100,000 entries and more. cryptography builds an object per entry when
asked for one (12 µs each: 1.2 s to list 100,000) and searches them one by one for a serial
(40 ms at 100,000): so load() verifies the signature first, then reads the signed list's
serial numbers by hand (_crl_der) into a dictionary (a check is one lookup), and keeps
nothing else of the CRL. It refuses what RFC 5280 says must not be used: a delta CRL (§5.2.4; a holder of
complete CRLs would take its few entries for the whole list), a critical CRL extension it does
not process (§5.2: issuingDistributionPoint of a partitioned CRL, or any other), and a
critical entry extension (§5.3: certificateIssuer of an indirect CRL)."""

from __future__ import annotations

import datetime
import hashlib
import threading
from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence, Tuple

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtensionOID

from . import _chain, _crl_der
from ._errors import Rejected


#: How far ahead of this clock a CRL's lastUpdate may be (DeviceID's CA writes a minute back).
CLOCK_SKEW = datetime.timedelta(minutes=5)


def ca_key_id(certificate: x509.Certificate) -> bytes:
    """SHA-256 of a CA certificate's SubjectPublicKeyInfo: which CA, whatever its name (two CAs
    may share one, `new-ca --name` twice in a rotation) and however often it was re-issued."""
    spki = certificate.public_key().public_bytes(serialization.Encoding.DER,
                                                 serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(spki).digest()


def _naive(obj: Any, name: str) -> Optional[datetime.datetime]:
    """A CRL time, naive UTC: through NAME_utc where cryptography has it (42 and later deprecate
    the naive property, Debian 13), NAME before (Debian 12). None if the CRL has none."""
    aware: Optional[datetime.datetime] = getattr(obj, f"{name}_utc", None)
    return aware.replace(tzinfo=None) if aware is not None else getattr(obj, name)


@dataclass(frozen=True)
class _Held:
    """What is kept of a loaded CRL: who signed it, how new it is, until when it holds, and its
    serial numbers (with where each one's revocationDate is in `tbs`)."""
    issuer: bytes
    issuer_text: str
    order: Tuple[datetime.datetime, int]
    next_update: datetime.datetime
    revoked: Dict[int, int]
    tbs: bytes


def _parse(data: bytes) -> x509.CertificateRevocationList:
    try:
        if data.lstrip().startswith(b"-----BEGIN"):
            crl = x509.load_pem_x509_crl(data)
        else:
            crl = x509.load_der_x509_crl(data)
        # read what the checks read now: cryptography parses names, times and extensions lazily
        crl.issuer.rfc4514_string()
        _naive(crl, "last_update")
        _naive(crl, "next_update")
        extensions = list(crl.extensions)
    except (ValueError, TypeError, KeyError, x509.InvalidVersion, x509.DuplicateExtension,
            x509.UnsupportedGeneralNameType) as e:  # what cryptography raises for bytes it reads late
        raise ValueError(f"not a CRL (DER or PEM): {e}") from None
    for extension in extensions:
        if extension.oid == ExtensionOID.DELTA_CRL_INDICATOR:
            raise ValueError("the CRL is a delta CRL (deltaCRLIndicator): this verifier holds complete CRLs "
                             "only (RFC 5280 §5.2.4); load the CA's complete CRL")
        if extension.critical:
            name = getattr(extension.oid, "_name", "unknown")
            raise ValueError(f"the CRL has a critical extension this verifier does not process: {name} "
                             f"({extension.oid.dotted_string}); RFC 5280 §5.2 forbids using it")
    return crl


def _order(crl: x509.CertificateRevocationList) -> Tuple[datetime.datetime, int]:
    """Which of two CRLs of one CA is newer: lastUpdate, then the CRL number (RFC 5280 §5.2.3;
    the times have seconds only, and a CA makes several CRLs in one second)."""
    try:
        number = crl.extensions.get_extension_for_class(x509.CRLNumber).value.crl_number
    except x509.ExtensionNotFound:
        number = -1
    return _naive(crl, "last_update") or datetime.datetime.min, number


class RevocationLists:
    """The newest CRL of each CA in `anchors` that was given to load(). Thread-safe."""

    def __init__(self, anchors: Sequence[x509.Certificate]) -> None:
        self._anchors = list(anchors)
        # the signing CA's key id → its newest CRL: two CAs may share one name (`new-ca --name`
        # twice, a rotation), and one's CRL must not replace the other's
        self._held: Dict[bytes, _Held] = {}
        self._lock = threading.Lock()

    def load(self, data: bytes) -> bool:
        """Hold the CRL in `data` (DER or PEM) for the trusted CA that signed it; True if it
        replaced an older one or was the first, False if one as new is held. ValueError if it is
        not a CRL, no trusted CA signed it, its nextUpdate is missing or past, its lastUpdate is
        more than CLOCK_SKEW ahead (a CRL from a clock in the future would outrank every later
        one), it is a delta CRL, or it has a critical extension (of the CRL or of an entry)
        this verifier does not process."""
        crl = _parse(data)
        issuer = crl.issuer.public_bytes()
        signer = next((a for a in self._anchors if a.subject.public_bytes() == issuer and self._signed(crl, a)), None)
        if signer is None:
            raise ValueError(f"no trusted CA certificate signed this CRL (issuer {crl.issuer.rfc4514_string()})")
        next_update, now = _naive(crl, "next_update"), _chain.utcnow()
        if next_update is None or next_update < now:
            raise ValueError("the CRL has no nextUpdate or it is past: fetch a current one")
        order = _order(crl)
        if order[0] > now + CLOCK_SKEW:
            raise ValueError(f"the CRL's lastUpdate {order[0].isoformat()}Z is ahead of this clock by more "
                             f"than {CLOCK_SKEW}: the CA's clock or this one is wrong")
        key = ca_key_id(signer)
        with self._lock:
            held = self._held.get(key)
            if held is not None and held.order >= order:
                return False
        tbs = crl.tbs_certlist_bytes  # signed: read after the signature verified
        kept = _Held(issuer, crl.issuer.rfc4514_string(), order, next_update, _crl_der.revoked_serials(tbs), tbs)
        with self._lock:
            held = self._held.get(key)
            if held is not None and held.order >= order:
                return False
            self._held[key] = kept
        return True

    @staticmethod
    def _signed(crl: x509.CertificateRevocationList, anchor: x509.Certificate) -> bool:
        key = anchor.public_key()
        return isinstance(key, (ec.EllipticCurvePublicKey, rsa.RSAPublicKey)) and crl.is_signature_valid(key)

    def check(self, certificate: x509.Certificate) -> None:
        """Rejected "revoked" if a CRL held of a CA with the certificate's issuer name lists it
        (every such CA's: serial numbers are random, and which of two same-named CAs issued it
        is the chain's business); "revocation-unknown" if one of those is past its nextUpdate.
        Nothing for an issuer without a CRL held (its revocation is the store's, or not checked)."""
        issuer = certificate.issuer.public_bytes()
        with self._lock:
            held = [crl for crl in self._held.values() if crl.issuer == issuer]
        for crl in held:
            self._judge(crl, certificate.serial_number)

    def holds(self, ca: bytes) -> bool:
        """Whether a CRL of the CA with this key id (ca_key_id) is held."""
        with self._lock:
            return ca in self._held

    def check_issued_by(self, ca: bytes, serial: int) -> None:
        """check() for a certificate known by its serial number and the key id (ca_key_id) of
        the trusted CA its chain ended at (a registered credential's AK certificate): against
        that CA's CRL, if one is held."""
        with self._lock:
            held = self._held.get(ca)
        if held is not None:
            self._judge(held, serial)

    @staticmethod
    def _judge(crl: _Held, serial: int) -> None:
        if crl.next_update < _chain.utcnow():
            raise Rejected("revocation-unknown", f"the CRL held for {crl.issuer_text} passed its "
                                                 f"nextUpdate {crl.next_update.isoformat()}Z: load a current one")
        at = crl.revoked.get(serial)
        if at is not None:
            revoked = _crl_der.time_at(crl.tbs, at)
            raise Rejected("revoked", f"the AK certificate {serial:x} is on its CA's CRL"
                                      + (f" (revoked {revoked.isoformat()}Z)" if revoked is not None else ""))


def revocation_lists(anchors: Sequence[x509.Certificate], crls: Sequence[bytes]) -> RevocationLists:
    """RevocationLists of `anchors` holding `crls` (ValueError for one that load() refuses)."""
    lists = RevocationLists(anchors)
    for data in crls:
        lists.load(data)
    return lists

