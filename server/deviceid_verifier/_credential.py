"""TPM2_MakeCredential, done in software by the CA (TPM 2.0 Part 1 §24 "Credential Protection"),
to any endorsement key of the TCG EK Credential Profile (_ek.py): the seed is RSA-OAEP-encrypted
to an RSA EK, or agreed by ECDH with an ECC EK (Part 1 §C.6.4, KDFe), and the credential is
protected with the EK's nameAlg and symmetric algorithm."""

from __future__ import annotations

import hashlib
import hmac
import os
import struct
from dataclasses import dataclass
from typing import Optional, Union

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from . import _ek

_IDENTITY_LABEL = b"IDENTITY\0"

EKPublicKey = Union[rsa.RSAPublicKey, ec.EllipticCurvePublicKey]


def kdfa(key: bytes, label: bytes, context_u: bytes, context_v: bytes, bits: int, hash_name: str = "sha256") -> bytes:
    """KDFa (TPM 2.0 Part 1 §11.4.10.2, SP 800-108 counter mode with HMAC):
    HMAC(key, counter ‖ label ‖ 0x00 ‖ contextU ‖ contextV ‖ bits), counter from 1,
    all integers 4 bytes big-endian; `label` is given without its terminating zero."""
    if bits <= 0 or bits % 8:
        raise ValueError("KDFa output must be a positive whole number of bytes")
    out = b""
    counter = 1
    while len(out) * 8 < bits:
        block = struct.pack(">I", counter) + label + b"\0" + context_u + context_v + struct.pack(">I", bits)
        out += hmac.new(key, block, hash_name).digest()
        counter += 1
    return out[:bits // 8]


def kdfe(z: bytes, label: bytes, party_u: bytes, party_v: bytes, bits: int, hash_name: str) -> bytes:
    """KDFe (TPM 2.0 Part 1 §11.4.10.3, SP 800-56A's concatenation KDF):
    H(counter ‖ Z ‖ label ‖ 0x00 ‖ PartyUInfo ‖ PartyVInfo), counter from 1, 4 bytes
    big-endian; `label` is given without its terminating zero."""
    if bits <= 0 or bits % 8:
        raise ValueError("KDFe output must be a positive whole number of bytes")
    out = b""
    counter = 1
    while len(out) * 8 < bits:
        out += hashlib.new(hash_name, struct.pack(">I", counter) + z + label + b"\0" + party_u + party_v).digest()
        counter += 1
    return out[:bits // 8]


def aes_cfb_encrypt(key: bytes, iv: bytes, data: bytes) -> bytes:
    """AES in CFB mode with 128-bit feedback (NIST SP 800-38A §6.3), the TPM's symmetric mode for
    credentials: C_i = P_i XOR AES(C_{i-1}), C_0 = IV, the last block cut to the data. Built on the
    single-block cipher because cryptography deprecates its CFB mode (moved to "decrepit" in 47,
    warned of at every use, removed in 49) while the TPM 2.0 specification keeps it."""
    block = Cipher(algorithms.AES(key), modes.ECB()).encryptor()  # one block at a time: the feedback
    out = bytearray()
    feedback = iv
    for start in range(0, len(data), 16):
        keystream = block.update(feedback)
        chunk = bytes(p ^ k for p, k in zip(data[start:start + 16], keystream))
        out += chunk
        feedback = chunk
    return bytes(out)


@dataclass(frozen=True)
class Credential:
    """MakeCredential's output, as the wire carries it (without outer TPM2B sizes)."""

    #: TPM2B_ID_OBJECT.credential: TPM2B_DIGEST(outer HMAC) ‖ AES-CFB(TPM2B_DIGEST(secret))
    credential_blob: bytes
    #: TPM2B_ENCRYPTED_SECRET.secret: the seed, RSA-OAEP(nameAlg, label "IDENTITY\0") to an RSA EK;
    #: for an ECC EK, the ephemeral public point (TPMS_ECC_POINT) the seed was agreed with
    encrypted_secret: bytes


def _field_bytes(curve: ec.EllipticCurve) -> int:
    return (curve.key_size + 7) // 8


def _ecc_point(public: ec.EllipticCurvePublicKey) -> tuple[bytes, bytes]:
    numbers, size = public.public_numbers(), _field_bytes(public.curve)
    return numbers.x.to_bytes(size, "big"), numbers.y.to_bytes(size, "big")


def make_credential(ek: EKPublicKey, secret: bytes, object_name: bytes, *, kind: Optional[_ek.EKKind] = None,
                    seed: Optional[bytes] = None,
                    ephemeral: Optional[ec.EllipticCurvePrivateKey] = None) -> Credential:
    """Seal `secret` to the EK so that only TPM2_ActivateCredential, on the TPM holding that EK
    and with an object of Name `object_name` loaded in it, recovers it. `kind` is the EK's
    template (its nameAlg and symmetric key size), by default the one its key implies
    (_ek.kind_of_key). `seed` (RSA) and `ephemeral` (ECC) fix the randomness, for tests."""
    if kind is None:
        kind = _ek.kind_of_key(ek)
    if kind is None or not kind.holds(ek):
        raise ValueError("the EK's key is not of a TCG EK template this CA knows")
    digest_bytes = hashlib.new(kind.name_alg).digest_size
    if not 0 < len(secret) <= digest_bytes:
        raise ValueError(f"the credential must be 1 to {digest_bytes} bytes")
    if isinstance(ek, rsa.RSAPublicKey):
        if seed is None:
            seed = os.urandom(digest_bytes)
        algorithm = getattr(hashes, kind.name_alg.upper())()
        encrypted_seed = ek.encrypt(
            seed, padding.OAEP(mgf=padding.MGF1(algorithm), algorithm=algorithm, label=_IDENTITY_LABEL))
    else:
        if ephemeral is None:
            ephemeral = ec.generate_private_key(ek.curve)
        z = ephemeral.exchange(ec.ECDH(), ek)
        ex, ey = _ecc_point(ephemeral.public_key())
        seed = kdfe(z, b"IDENTITY", ex, _ecc_point(ek)[0], digest_bytes * 8, kind.name_alg)
        encrypted_seed = struct.pack(">H", len(ex)) + ex + struct.pack(">H", len(ey)) + ey
    sym_key = kdfa(seed, b"STORAGE", object_name, b"", kind.symmetric_bits, kind.name_alg)
    enc_identity = aes_cfb_encrypt(sym_key, b"\0" * 16, struct.pack(">H", len(secret)) + secret)
    hmac_key = kdfa(seed, b"INTEGRITY", b"", b"", digest_bytes * 8, kind.name_alg)
    outer_hmac = hmac.new(hmac_key, enc_identity + object_name, kind.name_alg).digest()
    return Credential(struct.pack(">H", len(outer_hmac)) + outer_hmac + enc_identity, encrypted_seed)
