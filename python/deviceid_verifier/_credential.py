"""TPM2_MakeCredential, done in software by the CA (TPM 2.0 Part 1 §24 "Credential Protection"),
to the standard RSA 2048 EK (TCG EK Credential Profile template L-1: nameAlg SHA-256,
symmetric AES-128-CFB)."""

from __future__ import annotations

import hashlib
import hmac
import os
import struct
from dataclasses import dataclass

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

_IDENTITY_LABEL = b"IDENTITY\0"
_SHA256_BYTES = 32
_AES128_BITS = 128


def kdfa(key: bytes, label: bytes, context_u: bytes, context_v: bytes, bits: int) -> bytes:
    """KDFa with SHA-256 (TPM 2.0 Part 1 §11.4.10.2, SP 800-108 counter mode with HMAC):
    HMAC(key, counter ‖ label ‖ 0x00 ‖ contextU ‖ contextV ‖ bits), counter from 1,
    all integers 4 bytes big-endian; `label` is given without its terminating zero."""
    if bits <= 0 or bits % 8:
        raise ValueError("KDFa output must be a positive whole number of bytes")
    out = b""
    counter = 1
    while len(out) * 8 < bits:
        block = struct.pack(">I", counter) + label + b"\0" + context_u + context_v + struct.pack(">I", bits)
        out += hmac.new(key, block, hashlib.sha256).digest()
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
    #: TPM2B_ENCRYPTED_SECRET.secret: the seed, RSA-OAEP(SHA-256, label "IDENTITY\0") to the EK
    encrypted_secret: bytes


def make_credential(ek: rsa.RSAPublicKey, secret: bytes, object_name: bytes, *, seed: bytes | None = None) -> Credential:
    """Seal `secret` to the EK so that only TPM2_ActivateCredential, on the TPM holding that EK
    and with an object of Name `object_name` loaded in it, recovers it."""
    if not 0 < len(secret) <= _SHA256_BYTES * 2:
        raise ValueError("the credential must be 1 to 64 bytes")
    if seed is None:
        seed = os.urandom(_SHA256_BYTES)
    encrypted_seed = ek.encrypt(
        seed, padding.OAEP(mgf=padding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(), label=_IDENTITY_LABEL))
    sym_key = kdfa(seed, b"STORAGE", object_name, b"", _AES128_BITS)
    enc_identity = aes_cfb_encrypt(sym_key, b"\0" * 16, struct.pack(">H", len(secret)) + secret)
    hmac_key = kdfa(seed, b"INTEGRITY", b"", b"", _SHA256_BYTES * 8)
    outer_hmac = hmac.new(hmac_key, enc_identity + object_name, hashlib.sha256).digest()
    return Credential(struct.pack(">H", len(outer_hmac)) + outer_hmac + enc_identity, encrypted_seed)
