"""The Privacy CAs' CRLs as an app server holds them when it does not share a CA's store: one
current CRL per trusted CA, loaded from what the CA publishes (`GET /v1/crl`, `python3 -m
deviceid_verifier crl`), and the check of an AK certificate against its issuer's."""

from __future__ import annotations

import datetime
import threading
from typing import Any, Dict, Iterable, Optional, Sequence, Tuple, cast

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from . import _chain
from ._errors import Rejected


#: How far ahead of this clock a CRL's lastUpdate may be (DeviceID's CA writes a minute back).
CLOCK_SKEW = datetime.timedelta(minutes=5)


def _naive(obj: Any, name: str) -> Optional[datetime.datetime]:
    """A CRL time, naive UTC: through NAME_utc where cryptography has it (42 and later deprecate
    the naive property, Debian 13), NAME before (Debian 12). None if the CRL has none."""
    aware: Optional[datetime.datetime] = getattr(obj, f"{name}_utc", None)
    return aware.replace(tzinfo=None) if aware is not None else getattr(obj, name)


def _order(crl: x509.CertificateRevocationList) -> Tuple[datetime.datetime, int]:
    """Which of two CRLs of one CA is newer: lastUpdate, then the CRL number (RFC 5280 §5.2.3;
    the times have seconds only, and a CA makes several CRLs in one second)."""
    try:
        number = crl.extensions.get_extension_for_class(x509.CRLNumber).value.crl_number
    except x509.ExtensionNotFound:
        number = -1
    return _naive(crl, "last_update") or datetime.datetime.min, number


def _parse(data: bytes) -> x509.CertificateRevocationList:
    try:
        if data.lstrip().startswith(b"-----BEGIN"):
            crl = x509.load_pem_x509_crl(data)
        else:
            crl = x509.load_der_x509_crl(data)
        # read what the checks read now: cryptography parses names, times and entries lazily
        crl.issuer.rfc4514_string()
        _order(crl)
        [entry.serial_number for entry in cast(Iterable[x509.RevokedCertificate], crl)]
        return crl
    except (ValueError, TypeError, KeyError, x509.InvalidVersion, x509.DuplicateExtension,
            x509.UnsupportedGeneralNameType) as e:  # what cryptography raises for bytes it reads late
        raise ValueError(f"not a CRL (DER or PEM): {e}") from None


class RevocationLists:
    """The newest CRL of each CA in `anchors` that was given to load(). Thread-safe."""

    def __init__(self, anchors: Sequence[x509.Certificate]) -> None:
        self._anchors = list(anchors)
        # the signing CA's SubjectPublicKeyInfo → its newest CRL: two CAs may share one name
        # (`new-ca --name` twice, a rotation), and one's CRL must not replace the other's
        self._held: Dict[bytes, x509.CertificateRevocationList] = {}
        self._lock = threading.Lock()

    def load(self, data: bytes) -> bool:
        """Hold the CRL in `data` (DER or PEM) for the trusted CA that signed it; True if it
        replaced an older one or was the first, False if one as new is held. ValueError if it is
        not a CRL, no trusted CA signed it, its nextUpdate is missing or past, or its lastUpdate
        is more than CLOCK_SKEW ahead (a CRL from a clock in the future would outrank every
        later one)."""
        crl = _parse(data)
        issuer = crl.issuer.public_bytes()
        signer = next((a for a in self._anchors if a.subject.public_bytes() == issuer and self._signed(crl, a)), None)
        if signer is None:
            raise ValueError(f"no trusted CA certificate signed this CRL (issuer {crl.issuer.rfc4514_string()})")
        next_update, now = _naive(crl, "next_update"), _chain.utcnow()
        if next_update is None or next_update < now:
            raise ValueError("the CRL has no nextUpdate or it is past: fetch a current one")
        if _order(crl)[0] > now + CLOCK_SKEW:
            raise ValueError(f"the CRL's lastUpdate {_order(crl)[0].isoformat()}Z is ahead of this clock by more "
                             f"than {CLOCK_SKEW}: the CA's clock or this one is wrong")
        key = signer.public_key().public_bytes(serialization.Encoding.DER,
                                               serialization.PublicFormat.SubjectPublicKeyInfo)
        with self._lock:
            held = self._held.get(key)
            if held is not None and _order(held) >= _order(crl):
                return False
            self._held[key] = crl
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
            held = [crl for crl in self._held.values() if crl.issuer.public_bytes() == issuer]
        for crl in held:
            self._judge(crl, certificate.serial_number)

    def check_serial(self, serial: int) -> None:
        """check() for a certificate known by its serial number alone (a registered credential's
        AK certificate): against every CRL held, since serial numbers are random (159 bits from
        DeviceID's CA) and a stale CRL of any CA leaves it undecided."""
        with self._lock:
            held = list(self._held.values())
        for crl in held:
            self._judge(crl, serial)

    @staticmethod
    def _judge(crl: x509.CertificateRevocationList, serial: int) -> None:
        next_update = _naive(crl, "next_update")
        if next_update is not None and next_update < _chain.utcnow():
            raise Rejected("revocation-unknown", f"the CRL held for {crl.issuer.rfc4514_string()} passed its "
                                                 f"nextUpdate {next_update.isoformat()}Z: load a current one")
        entry = crl.get_revoked_certificate_by_serial_number(serial)
        if entry is not None:
            revoked = _naive(entry, "revocation_date")
            raise Rejected("revoked", f"the AK certificate {serial:x} is on its CA's CRL"
                                      + (f" (revoked {revoked.isoformat()}Z)" if revoked is not None else ""))


def revocation_lists(anchors: Sequence[x509.Certificate], crls: Sequence[bytes]) -> RevocationLists:
    """RevocationLists of `anchors` holding `crls` (ValueError for one that load() refuses)."""
    lists = RevocationLists(anchors)
    for data in crls:
        lists.load(data)
    return lists

