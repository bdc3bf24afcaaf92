"""Risk receipts (issue 55; docs/SERVER.md, "Risk receipts"): the CA's risk figure for an AK — the
AK certificates it issued for the app id to the device (the TPM, all its EKs) in the last 30
days — as a compact JWS (RFC 7515) signed with the CA's key, which an app server verifies
offline with the CA certificate alone, with any JOSE library.

Refreshed as App Attest's: before its not-before time (`nbf`, REFRESH_AFTER after it was made)
a receipt refreshes to itself; after it, to a new receipt with the figure then; after its
expiry (`exp`, LIFETIME after it was made) or its AK certificate's, to nothing ("receipt-expired").
The signature is made by the CA key's own sign(), as certificates and CRLs are: a key in a
PKCS #11 token or decrypted from a passphrase-protected file signs receipts the same way."""

from __future__ import annotations

import base64
import binascii
import datetime
import json
from typing import Any, Dict, Optional, Sequence, Tuple

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

from ._errors import Rejected

#: A receipt's nbf after its iat: the soonest a refresh gives a new figure (App Attest's: a day).
REFRESH_AFTER = datetime.timedelta(days=1)
#: A receipt's exp after its iat: how long it can be refreshed.
LIFETIME = datetime.timedelta(days=30)
#: The largest receipt refreshReceipt reads, in characters.
MAX_RECEIPT = 4096
#: The claims every receipt has.
CLAIMS = ("app_id", "risk", "iat", "nbf", "exp", "ak_name", "ak_certificate_serial")

#: JWS "alg" (RFC 7518 §3.1) of each curve's ECDSA, with its hash; RSA keys sign RS256.
_EC_ALGORITHMS = {"secp256r1": ("ES256", hashes.SHA256()), "secp384r1": ("ES384", hashes.SHA384()),
                  "secp521r1": ("ES512", hashes.SHA512())}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text.encode("ascii") + b"=" * (-len(text) % 4))


def _algorithm(key: Any) -> Tuple[str, hashes.HashAlgorithm]:
    if isinstance(key, (ec.EllipticCurvePrivateKey, ec.EllipticCurvePublicKey)):
        if key.curve.name not in _EC_ALGORITHMS:
            raise ValueError(f"no JWS algorithm signs with ECDSA on {key.curve.name}")
        return _EC_ALGORITHMS[key.curve.name]
    return "RS256", hashes.SHA256()


def _epoch(when: datetime.datetime) -> int:
    return int((when - datetime.datetime(1970, 1, 1)).total_seconds())


def sign(key: Any, app_id: str, risk: int, ak_name: bytes, serial: int, now: datetime.datetime) -> str:
    """A receipt of `risk` for the AK of this Name and certificate serial, made at `now` (naive UTC),
    signed by the CA key `key` (ECDSA: the JWS's R ‖ S; RSA: PKCS #1 v1.5)."""
    alg, digest = _algorithm(key)
    header = {"alg": alg, "typ": "JWT"}
    claims = {"app_id": app_id, "risk": risk, "iat": _epoch(now), "nbf": _epoch(now + REFRESH_AFTER),
              "exp": _epoch(now + LIFETIME), "ak_name": ak_name.hex(), "ak_certificate_serial": format(serial, "x")}
    signing_input = ".".join(_b64(json.dumps(part, separators=(",", ":")).encode("utf-8")) for part in (header, claims))
    if isinstance(key, rsa.RSAPrivateKey):
        signature = key.sign(signing_input.encode("ascii"), padding.PKCS1v15(), digest)
    else:
        r, s = decode_dss_signature(key.sign(signing_input.encode("ascii"), ec.ECDSA(digest)))
        size = (key.curve.key_size + 7) // 8
        signature = r.to_bytes(size, "big") + s.to_bytes(size, "big")
    return f"{signing_input}.{_b64(signature)}"


def verify(receipt: str, ca_certificates: Sequence[x509.Certificate]) -> Dict[str, Any]:
    """The claims of `receipt` if one of these CA certificates' keys signed it; Rejected
    "receipt-invalid" otherwise. Its times are not judged here (refresh() judges them)."""
    if not isinstance(receipt, str) or len(receipt) > MAX_RECEIPT or receipt.count(".") != 2:
        raise Rejected("receipt-invalid", "the receipt is not a compact JWS")
    try:
        header_part, claims_part, signature_part = receipt.split(".")
        header = json.loads(_unb64(header_part))
        claims = json.loads(_unb64(claims_part))
        signature = _unb64(signature_part)
    except (UnicodeEncodeError, binascii.Error, ValueError, RecursionError):
        raise Rejected("receipt-invalid", "the receipt is not a compact JWS of JSON parts") from None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise Rejected("receipt-invalid", "the receipt's header or claims are not JSON objects")
    signing_input = f"{header_part}.{claims_part}".encode("ascii")
    if not any(_signed_by(c.public_key(), header.get("alg"), signing_input, signature) for c in ca_certificates):
        raise Rejected("receipt-invalid", "the receipt's signature is not the CA's")
    if not all(name in claims for name in CLAIMS) or not all(
            type(claims[name]) is int for name in ("risk", "iat", "nbf", "exp")):  # noqa: E721 (true is not 1)
        raise Rejected("receipt-invalid", f"the receipt lacks a claim of {', '.join(CLAIMS)}")
    return claims


def _signed_by(public: Any, alg: Any, signing_input: bytes, signature: bytes) -> bool:
    try:
        expected, digest = _algorithm(public)
    except ValueError:
        return False
    if alg != expected:
        return False
    try:
        if isinstance(public, rsa.RSAPublicKey):
            public.verify(signature, signing_input, padding.PKCS1v15(), digest)
        elif isinstance(public, ec.EllipticCurvePublicKey):
            size = (public.curve.key_size + 7) // 8
            if len(signature) != 2 * size:
                return False
            der = encode_dss_signature(int.from_bytes(signature[:size], "big"), int.from_bytes(signature[size:], "big"))
            public.verify(der, signing_input, ec.ECDSA(digest))
        else:
            return False
    except InvalidSignature:
        return False
    return True


def due(claims: Dict[str, Any], now: datetime.datetime, ak_not_after: Optional[datetime.datetime]) -> bool:
    """Whether a receipt of these claims refreshes to a new one at `now` (False: to itself);
    Rejected "receipt-expired" once it, or the AK certificate valid until `ak_not_after` (None: not
    issued by this CA), expired."""
    if _epoch(now) > claims["exp"] or ak_not_after is None or now > ak_not_after:
        raise Rejected("receipt-expired", "the receipt (or its AK certificate) expired: the device attests again, "
                                          "and its verification carries a new receipt")
    return bool(_epoch(now) >= claims["nbf"])
