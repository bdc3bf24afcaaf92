"""The platform-AK route of the enrolment (docs/HARDWARE-ID.md, "Platform attestation keys"): a
virtual TPM without an EK certificate (Azure's Trusted Launch vTPM, GCE's Shielded VM) keeps an
attestation key of its own with a certificate from its cloud's vTPM CA. That platform AK certifies the app's AK
(TPM2_Certify over the CA's nonce); the CA checks the certificate against the anchors its operator
configured (the cloud's vTPM root), the signature against the certificate's key, and that the
certified Name is the AK's and the qualifying data its nonce."""

from __future__ import annotations

import datetime
import hashlib
import hmac
from typing import Sequence, Union

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from . import _chain, _tpm
from ._errors import Rejected

#: The platform AKs devices name (`platform_ak`), as DeviceID's devices find them: Azure's at
#: persistent handle 0x81000003 with its certificate at NV index 0x01c101d0; GCE's, made from the
#: template at NV index 0x01c10001 (RSA) or 0x01c10003 (ECC), certificate at 0x01c10000 or 0x01c10002.
KINDS = ("azure", "gce-rsa", "gce-ecc")
_NONCE_LABEL = b"deviceid.platform-ak.nonce.v1"
_TPM_ALG_RSASSA = 0x0014
_HASHES: dict[int, hashes.HashAlgorithm] = {0x000B: hashes.SHA256(), 0x000C: hashes.SHA384(), 0x000D: hashes.SHA512()}
_CURVES = (ec.SECP256R1, ec.SECP384R1)
#: The key algorithm of the kinds that have one (Azure's AK is RSA or ECC).
_KIND_ALGORITHMS: dict[str, type] = {"gce-rsa": rsa.RSAPublicKey, "gce-ecc": ec.EllipticCurvePublicKey}

PlatformKey = Union[rsa.RSAPublicKey, ec.EllipticCurvePublicKey]


def nonce_of(secret: bytes) -> bytes:
    """The nonce a platform-ak challenge carries for the pending challenge's `secret`: HMAC-SHA-256
    of a fixed label under it, so that what the CA keeps secret is never what it sends."""
    return hmac.new(secret, _NONCE_LABEL, hashlib.sha256).digest()


def check_kind(name: object) -> str:
    """`name` if it is a platform AK devices name; Rejected("malformed") otherwise."""
    if not isinstance(name, str) or name not in KINDS:
        raise Rejected("malformed", f"platform_ak is {name!r}, not one of {', '.join(KINDS)}")
    return name


def platform_key(kind: str, certificate: x509.Certificate, anchors: Sequence[x509.Certificate],
                 intermediates: Sequence[x509.Certificate], at: datetime.datetime) -> PlatformKey:
    """The key of the platform AK `kind` from its certificate: one that chains to `anchors` and is
    an end entity's that may sign ("ek-untrusted" otherwise), holding a key key_of accepts and of
    the kind's algorithm ("ek-mismatch")."""
    if not anchors:
        raise Rejected("ek-untrusted", "the TPM certifies its AK with a platform AK, and this CA trusts no platform AK "
                                       "root (platform_ak_anchors)")
    try:
        _chain.verify_chain(certificate, anchors, intermediates, at=at)
    except _chain.ChainError as e:
        raise Rejected("ek-untrusted", f"the platform AK certificate does not chain to a trusted platform AK root: {e}") \
            from None
    _check_end_entity(certificate, anchors)
    key = key_of(certificate)
    algorithm = _KIND_ALGORITHMS.get(kind)
    if algorithm is not None and not isinstance(key, algorithm):
        raise Rejected("ek-mismatch", f"the platform AK {kind} is an {'RSA' if algorithm is rsa.RSAPublicKey else 'ECC'} "
                                      "key, and its certificate holds another kind")
    return key


def _check_end_entity(certificate: x509.Certificate, anchors: Sequence[x509.Certificate]) -> None:
    """Refuses ("ek-untrusted") a certificate under the anchors that is not an AK's: an anchor
    itself, a CA, or one whose key usage does not include signing. A cloud's vTPM root may
    issue more than AK certificates (GCE's issues EK certificates too), and only the AK is a key
    the TPM alone holds and signs TPMS_ATTEST with."""
    if any(certificate == anchor for anchor in anchors):
        raise Rejected("ek-untrusted", "the platform AK certificate is a trusted root itself, not an AK's certificate")
    try:
        constraints = certificate.extensions.get_extension_for_class(x509.BasicConstraints).value
        if constraints.ca:
            raise Rejected("ek-untrusted", "the platform AK certificate is a CA's (basicConstraints cA), not an AK's")
    except x509.ExtensionNotFound:
        pass
    try:
        usage = certificate.extensions.get_extension_for_class(x509.KeyUsage).value
        if not usage.digital_signature:
            raise Rejected("ek-untrusted", "the platform AK certificate's key usage does not include digitalSignature")
    except x509.ExtensionNotFound:
        pass


def key_of(certificate: x509.Certificate) -> PlatformKey:
    """The key of a platform AK certificate: an RSA key of 2048 bits or more or an ECC P-256 or
    P-384 key ("ek-mismatch" otherwise)."""
    try:
        key = certificate.public_key()
    except (ValueError, UnsupportedAlgorithm) as e:
        raise Rejected("ek-mismatch", f"the platform AK certificate's key does not parse: {e}") from None
    if isinstance(key, rsa.RSAPublicKey) and key.key_size >= 2048:
        return key
    if isinstance(key, ec.EllipticCurvePublicKey) and isinstance(key.curve, _CURVES):
        return key
    raise Rejected("ek-mismatch", "the platform AK certificate holds neither an RSA key of 2048 bits or more nor an "
                                  "ECC P-256 or P-384 key")


def verify_signature(key: PlatformKey, attest: bytes, signature: bytes) -> None:
    """Checks a marshalled TPMT_SIGNATURE over `attest` by the platform AK: RSASSA-PKCS1-v1_5 for
    an RSA key, ECDSA for an ECC one, with SHA-256, -384 or -512 ("signature" otherwise; a broken
    encoding is "malformed")."""
    reader = _tpm.Reader(signature, "certify_signature")
    sig_alg, hash_alg = reader.u16(), reader.u16()
    algorithm = _HASHES.get(hash_alg)
    if algorithm is None:
        raise Rejected("signature", f"the platform AK's signature hash is {hash_alg:#06x}, not SHA-256, -384 or -512")
    try:
        if isinstance(key, rsa.RSAPublicKey) and sig_alg == _TPM_ALG_RSASSA:
            value = reader.tpm2b()
            reader.end()
            key.verify(value, attest, padding.PKCS1v15(), algorithm)
        elif isinstance(key, ec.EllipticCurvePublicKey) and sig_alg == _tpm.TPM_ALG_ECDSA:
            r, s = reader.tpm2b(), reader.tpm2b()
            reader.end()
            key.verify(encode_dss_signature(int.from_bytes(r, "big"), int.from_bytes(s, "big")), attest,
                       ec.ECDSA(algorithm))
        else:
            raise Rejected("signature", f"the platform AK's signature is of algorithm {sig_alg:#06x}, not its key's "
                                        "(RSASSA for RSA, ECDSA for ECC)")
    except InvalidSignature:
        raise Rejected("signature", "the platform AK's signature over certify_attest is not valid for its "
                                    "certificate's key") from None


def check_certification(attest: bytes, nonce: bytes, ak_name: bytes) -> None:
    """Checks that `attest` (TPMS_ATTEST) certifies the AK of Name `ak_name` over `nonce`:
    "nonce-mismatch", "ak-mismatch", or the parser's reasons."""
    info = _tpm.parse_certify_attest(attest)
    if not hmac.compare_digest(info.extra_data, nonce):
        raise Rejected("nonce-mismatch", "the platform AK certified over another nonce than the challenge's")
    if info.name != ak_name:
        raise Rejected("ak-mismatch", "the platform AK certified another key than the AK of the enrolment request")
