"""The endorsement keys of the TCG EK Credential Profile for TPM Family 2.0 (version 2.5,
§2.2.1.4 and Annex B) that DeviceID's devices use, by the name the profile gives their templates:
their key, nameAlg and symmetric algorithm (what MakeCredential needs) and the NV index of their
certificate. One owner on the CA's side; the device's is tpm_objects.c (the same names)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Optional, Sequence, Union

from cryptography.hazmat.primitives.asymmetric import ec, rsa

_RSA_EXPONENT = 65537  # the templates' exponent 0


@dataclass(frozen=True)
class EKKind:
    #: the profile's template name: "L-1", "L-2" (low range), "H-1" … "H-7" (high range)
    name: str
    #: "rsa" with its modulus size, or "ecc" with its curve
    algorithm: str
    rsa_bits: int
    curve: Optional[type[ec.EllipticCurve]]
    #: hashlib's name of the template's nameAlg
    name_alg: str
    #: AES key size of the template's symmetric (CFB) algorithm
    symmetric_bits: int
    #: the NV index of the EK certificate
    certificate_index: int

    def holds(self, key: object) -> bool:
        """Whether `key` (an EK certificate's public key) is of this template's type and size."""
        if self.algorithm == "rsa":
            return (isinstance(key, rsa.RSAPublicKey) and key.key_size == self.rsa_bits
                    and key.public_numbers().e == _RSA_EXPONENT)
        return isinstance(key, ec.EllipticCurvePublicKey) and self.curve is not None \
            and isinstance(key.curve, self.curve)

    def describe(self) -> str:
        key = f"RSA {self.rsa_bits}" if self.algorithm == "rsa" else f"ECC {self.curve.name if self.curve else '?'}"
        return f"{self.name} ({key}, certificate at NV {self.certificate_index:#010x})"


def _rsa(name: str, bits: int, name_alg: str, symmetric: int, index: int) -> EKKind:
    return EKKind(name, "rsa", bits, None, name_alg, symmetric, index)


def _ecc(name: str, curve: type[ec.EllipticCurve], name_alg: str, symmetric: int, index: int) -> EKKind:
    return EKKind(name, "ecc", 0, curve, name_alg, symmetric, index)


#: Every kind DeviceID supports, in the order a device prefers them when it holds several and its
#: CA expresses no preference. H-5 (SM2 with SM3 and SM4) is not among them.
KINDS: Sequence[EKKind] = (
    _rsa("L-1", 2048, "sha256", 128, 0x01C00002),
    _ecc("L-2", ec.SECP256R1, "sha256", 128, 0x01C0000A),
    _rsa("H-1", 2048, "sha256", 128, 0x01C00012),
    _ecc("H-2", ec.SECP256R1, "sha256", 128, 0x01C00014),
    _ecc("H-3", ec.SECP384R1, "sha384", 256, 0x01C00016),
    _ecc("H-4", ec.SECP521R1, "sha512", 256, 0x01C00018),
    _rsa("H-6", 3072, "sha384", 256, 0x01C0001C),
    _rsa("H-7", 4096, "sha384", 256, 0x01C0001E),
)
BY_NAME = {kind.name: kind for kind in KINDS}


def kind_named(name: str) -> Optional[EKKind]:
    return BY_NAME.get(name)


def kind_of_key(key: Union[rsa.RSAPublicKey, ec.EllipticCurvePublicKey, object]) -> Optional[EKKind]:
    """The first kind whose key type and size `key` has (L-1 for an RSA 2048 key, L-2 for
    P-256, H-3 for P-384…): templates of one key type share nameAlg and symmetric algorithm."""
    return next((kind for kind in KINDS if kind.holds(key)), None)


_ALG_RSA, _ALG_ECC, _ALG_NULL = 0x0001, 0x0023, 0x0010
_CURVES: dict[int, type[ec.EllipticCurve]] = {0x0003: ec.SECP256R1, 0x0004: ec.SECP384R1, 0x0005: ec.SECP521R1}


def key_of_public(public: bytes) -> Union[rsa.RSAPublicKey, ec.EllipticCurvePublicKey]:
    """The public key in an EK's marshalled TPMT_PUBLIC (a request's ek_public); ValueError, with
    what is wrong, for anything else: another type, a cut or overlong structure, a point off its
    curve."""
    at = 0

    def take(size: int) -> bytes:
        nonlocal at
        if at + size > len(public):
            raise ValueError("ek_public is cut short")
        at += size
        return public[at - size:at]

    def u16() -> int:
        return int(struct.unpack(">H", take(2))[0])

    kind, _name_alg, _attributes = u16(), u16(), take(4)
    take(u16())  # authPolicy
    if u16() != _ALG_NULL:  # symmetric: keyBits and mode follow
        take(4)
    if u16() != _ALG_NULL:  # scheme: its hash follows
        take(2)
    key: Union[rsa.RSAPublicKey, ec.EllipticCurvePublicKey]
    if kind == _ALG_RSA:
        _bits, exponent = u16(), struct.unpack(">I", take(4))[0]
        modulus = int.from_bytes(take(u16()), "big")
        key = rsa.RSAPublicNumbers(exponent or _RSA_EXPONENT, modulus).public_key()
    elif kind == _ALG_ECC:
        curve = _CURVES.get(u16())
        if u16() != _ALG_NULL:  # kdf: its hash follows
            take(2)
        x, y = int.from_bytes(take(u16()), "big"), int.from_bytes(take(u16()), "big")
        if curve is None:
            raise ValueError("ek_public's curve is none of P-256, P-384, P-521")
        key = ec.EllipticCurvePublicNumbers(x, y, curve()).public_key()
    else:
        raise ValueError(f"ek_public is of type {kind:#06x}, neither RSA nor ECC")
    if at != len(public):
        raise ValueError(f"ek_public has {len(public) - at} bytes after its TPMT_PUBLIC")
    return key
