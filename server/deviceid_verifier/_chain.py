"""X.509 path validation, by hand (cryptography 38 has no verifier).

It checks what these chains need and nothing else: issuer/subject names, signatures
(RSA PKCS#1 v1.5 or ECDSA, SHA-256/384/512), validity at the time given, basicConstraints CA
and pathLenConstraint and keyUsage keyCertSign on every issuer, and no critical extension
outside those the TCG EK and AK profiles use. It does not check revocation or policies.

A trust anchor is trusted as itself (RFC 5280 §6.1): a path ends at the first certificate
that equals an anchor. Anchors must still be CA certificates within their validity.
"""

from __future__ import annotations

import datetime
from typing import Dict, List, Sequence, Union

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.x509.oid import ExtensionOID, SignatureAlgorithmOID

MAX_DEPTH = 8

_RSA_SIGNATURES = {
    SignatureAlgorithmOID.RSA_WITH_SHA256, SignatureAlgorithmOID.RSA_WITH_SHA384, SignatureAlgorithmOID.RSA_WITH_SHA512,
}
_ECDSA_SIGNATURES = {
    SignatureAlgorithmOID.ECDSA_WITH_SHA256, SignatureAlgorithmOID.ECDSA_WITH_SHA384,
    SignatureAlgorithmOID.ECDSA_WITH_SHA512,
}

#: Critical extensions this module understands or may ignore. The TCG EK Credential Profile
#: marks subjectAltName critical (the subject is empty; the TPM manufacturer, model and version
#: are a directoryName in it), and basicConstraints and keyUsage usually are; extendedKeyUsage
#: (tcg-kp-EKCertificate / tcg-kp-AIKCertificate) and subjectDirectoryAttributes (TPM
#: specification) are tolerated too.
TOLERATED_CRITICAL = frozenset({
    ExtensionOID.BASIC_CONSTRAINTS, ExtensionOID.KEY_USAGE, ExtensionOID.EXTENDED_KEY_USAGE,
    ExtensionOID.SUBJECT_ALTERNATIVE_NAME, ExtensionOID.SUBJECT_DIRECTORY_ATTRIBUTES,
})


class ChainError(Exception):
    """The certificate does not chain to a trust anchor; the message says why."""


def utcnow() -> datetime.datetime:
    """The current time as a naive UTC datetime, the form cryptography 38's validity uses."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def not_before(cert: x509.Certificate) -> datetime.datetime:
    """The start of validity, naive UTC: through not_valid_before_utc where cryptography has it
    (42 and later deprecate the naive property, Debian 13), not_valid_before before (Debian 12)."""
    aware: datetime.datetime | None = getattr(cert, "not_valid_before_utc", None)
    return aware.replace(tzinfo=None) if aware is not None else cert.not_valid_before


def not_after(cert: x509.Certificate) -> datetime.datetime:
    """The end of validity, naive UTC (see not_before)."""
    aware: datetime.datetime | None = getattr(cert, "not_valid_after_utc", None)
    return aware.replace(tzinfo=None) if aware is not None else cert.not_valid_after


def load_der(der: bytes) -> x509.Certificate:
    """A certificate from DER with every part these checks read parsed now: cryptography parses
    the version, the names and the validity only when they are first read, and then raises
    ValueError (a name that is not valid UTF-8 where UTF8String says it is), InvalidVersion
    (which cryptography 38 does not make a ValueError), KeyError (a string tag it does not
    know) or TypeError (a BIT STRING in a name), far from the code that loaded it."""
    try:
        return parsed(x509.load_der_x509_certificate(der))
    except (ValueError, x509.InvalidVersion) as e:
        raise ChainError(f"not a DER X.509 certificate: {e}") from None


def split_der(data: bytes) -> List[bytes]:
    """The DER SEQUENCEs `data` holds one after another, whole (X.509 certificates, each loaded
    with load_der afterwards); ChainError if a byte is left over or one is cut short."""
    parts, at = [], 0
    while at < len(data):
        if data[at] != 0x30 or at + 2 > len(data):
            raise ChainError(f"byte {at} does not start a DER certificate")
        length, header = data[at + 1], 2
        if length & 0x80:
            digits = length & 0x7F
            if not 1 <= digits <= 3 or at + 2 + digits > len(data):
                raise ChainError(f"the DER length at byte {at} does not parse")
            length, header = int.from_bytes(data[at + 2:at + 2 + digits], "big"), 2 + digits
        if at + header + length > len(data):
            raise ChainError(f"the DER certificate at byte {at} is cut short")
        parts.append(data[at:at + header + length])
        at += header + length
    return parts


def parsed(cert: x509.Certificate) -> x509.Certificate:
    """`cert`, its lazily parsed parts read once (see load_der); ChainError if one does not parse."""
    try:
        cert.version
        cert.issuer.rfc4514_string()
        cert.subject.rfc4514_string()
        not_before(cert)
        not_after(cert)
    except (ValueError, TypeError, KeyError, x509.InvalidVersion) as e:
        # KeyError: a name's string type is a tag cryptography does not know; TypeError: a BIT
        # STRING where only x500UniqueIdentifier may have one.
        raise ChainError(f"a part of the certificate does not parse: {e!r}") from None
    return cert


#: The most certificates whose extensions _HELD keeps.
MAX_HELD = 1024
#: The extensions of the certificates trusted_set() was given (or why they do not parse), read
#: once, by certificate. cryptography 38 (Debian 12) reads a certificate's extensions under an
#: exclusive borrow of the object, in which it runs Python code: two threads of a worker on one
#: trust anchor, one reading its extensions while the other read its subject or key, failed one
#: of them with RuntimeError("Already borrowed"), a 500. A certificate held for a verifier's life
#: has its extensions read here instead; one made per request is no other thread's.
_HELD: Dict[x509.Certificate, Union[x509.Extensions, ChainError]] = {}


def trusted_set(certificates: Sequence[x509.Certificate], what: str) -> List[x509.Certificate]:
    """The anchors or intermediates an operator gives, each parsed now: one whose name does not
    parse would otherwise fail every later path search that meets it. ValueError names it."""
    out = []
    for index, cert in enumerate(certificates):
        try:
            out.append(parsed(cert))
        except ChainError as e:
            raise ValueError(f"{what} {index}: {e}") from None
        if cert not in _HELD and len(_HELD) < MAX_HELD:
            try:
                _HELD[cert] = _read_extensions(cert)
            except ChainError as e:
                _HELD[cert] = e
    return out


def _describe(cert: x509.Certificate) -> str:
    return cert.subject.rfc4514_string() or "(empty subject)"


def _extensions(cert: x509.Certificate) -> x509.Extensions:
    held = _HELD.get(cert)
    if isinstance(held, ChainError):
        raise ChainError(str(held))
    return _read_extensions(cert) if held is None else held


def _read_extensions(cert: x509.Certificate) -> x509.Extensions:
    try:
        return cert.extensions
    except (ValueError, TypeError, KeyError, x509.DuplicateExtension, x509.UnsupportedGeneralNameType) as e:
        # KeyError, TypeError: a directoryName's attribute as parsed() names them.
        raise ChainError(f"{_describe(cert)}: extensions do not parse: {e!r}") from None


def check_certificate(cert: x509.Certificate, at: datetime.datetime) -> None:
    """Checks of one certificate on its own: validity at `at` and critical extensions."""
    if not not_before(cert) <= at <= not_after(cert):
        raise ChainError(f"{_describe(cert)}: not valid at {at.isoformat()}Z "
                         f"(valid {not_before(cert).isoformat()}Z to {not_after(cert).isoformat()}Z)")
    for extension in _extensions(cert):
        if extension.critical and extension.oid not in TOLERATED_CRITICAL:
            raise ChainError(f"{_describe(cert)}: unsupported critical extension {extension.oid.dotted_string}")


def signed_by(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    """Whether `issuer`'s key made `cert`'s signature (names are not compared here)."""
    try:
        key = issuer.public_key()
    except (ValueError, UnsupportedAlgorithm):
        return False
    oid = cert.signature_algorithm_oid
    try:
        algorithm = cert.signature_hash_algorithm
    except UnsupportedAlgorithm:
        return False
    if not isinstance(algorithm, (hashes.SHA256, hashes.SHA384, hashes.SHA512)):
        return False
    try:
        if oid in _RSA_SIGNATURES and isinstance(key, rsa.RSAPublicKey):
            key.verify(cert.signature, cert.tbs_certificate_bytes, padding.PKCS1v15(), algorithm)
        elif oid in _ECDSA_SIGNATURES and isinstance(key, ec.EllipticCurvePublicKey):
            key.verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(algorithm))
        else:
            return False
    except InvalidSignature:
        return False
    return True


def _check_issuer(issuer: x509.Certificate, below: int) -> None:
    """An issuer must be a CA allowed to have `below` intermediates beneath it, that signs certificates."""
    extensions = _extensions(issuer)
    try:
        constraints = extensions.get_extension_for_class(x509.BasicConstraints).value
    except x509.ExtensionNotFound:
        raise ChainError(f"{_describe(issuer)}: no basicConstraints, so it is not a CA") from None
    if not constraints.ca:
        raise ChainError(f"{_describe(issuer)}: basicConstraints says it is not a CA")
    if constraints.path_length is not None and below > constraints.path_length:
        raise ChainError(f"{_describe(issuer)}: pathLenConstraint {constraints.path_length} exceeded")
    try:
        usage = extensions.get_extension_for_class(x509.KeyUsage).value
    except x509.ExtensionNotFound:
        return
    if not usage.key_cert_sign:
        raise ChainError(f"{_describe(issuer)}: keyUsage lacks keyCertSign")


def verify_chain(leaf: x509.Certificate, anchors: Sequence[x509.Certificate],
                 intermediates: Sequence[x509.Certificate] = (), *,
                 at: datetime.datetime | None = None) -> List[x509.Certificate]:
    """The path from `leaf` to a trust anchor, leaf first, anchor last; ChainError if there is none.
    `intermediates` are untrusted certificates that may be used to build the path."""
    when = utcnow() if at is None else at
    anchor_set = list(anchors)
    errors: List[str] = []

    def extend(path: List[x509.Certificate]) -> List[x509.Certificate] | None:
        cert = path[-1]
        if any(cert == anchor for anchor in anchor_set):
            return path
        if len(path) > MAX_DEPTH:
            errors.append(f"{_describe(leaf)}: path longer than {MAX_DEPTH}")
            return None
        candidates = [c for c in [*anchor_set, *intermediates] if c.subject == cert.issuer and c not in path]
        if not candidates:
            errors.append(f"{_describe(cert)}: issuer {cert.issuer.rfc4514_string()!r} is not a trusted or known CA")
        for issuer in candidates:
            if not signed_by(cert, issuer):
                errors.append(f"{_describe(cert)}: signature does not verify with {_describe(issuer)}'s key "
                              "(or its algorithm is not RSA PKCS#1 v1.5 / ECDSA with SHA-2)")
                continue
            try:
                check_certificate(issuer, when)
                _check_issuer(issuer, len(path) - 1)
            except ChainError as e:
                errors.append(str(e))
                continue
            found = extend([*path, issuer])
            if found is not None:
                return found
        return None

    check_certificate(leaf, when)
    found = extend([leaf])
    if found is None:
        raise ChainError("; ".join(dict.fromkeys(errors)) or f"{_describe(leaf)}: no path to a trust anchor")
    return found
