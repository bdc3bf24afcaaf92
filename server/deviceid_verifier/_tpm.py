"""TPM 2.0 structures, templates and hashes: the frozen app key and AK templates, Names, the
hardware ID, and hand-written parsers for the three structures a verifier reads (TPMT_PUBLIC of
the two templates, TPMS_ATTEST of a certification, TPMT_SIGNATURE of ECDSA).

Every structure is in TPM marshalled form: big-endian integers, TPM2B = 2-byte size + bytes,
and without the outer TPM2B size of TPM2B_PUBLIC / TPM2B_ATTEST.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

from ._errors import Rejected
# The TPM's facts, from their one owner (Sources/CDeviceIDTPM/tpm-facts.tsv, scripts/gen-tpm).
from ._tpm_facts import (
    AK_ATTRIBUTES as AK_ATTRIBUTES,
    APP_KEY_ATTRIBUTES as APP_KEY_ATTRIBUTES,
    ATTESTATION_KEY_LABEL,
    CREDENTIAL_KEY_LABEL,
    HARDWARE_ID_LABEL,
    HARDWARE_ID_NAME_LABEL,
    TPM_ALG_ECC,
    TPM_ALG_ECDSA as TPM_ALG_ECDSA,
    TPM_ALG_NULL,
    TPM_ALG_RSA,
    TPM_ALG_SHA256,
    TPM_ECC_NIST_P256,
    TPM_GENERATED_VALUE,
    TPM_RH_ENDORSEMENT as TPM_RH_ENDORSEMENT,
    TPM_RH_OWNER as TPM_RH_OWNER,
    TPM_RH_PLATFORM as TPM_RH_PLATFORM,
    TPM_ST_ATTEST_CERTIFY,
)

P256_BYTES = 32


def _len32(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def app_key_unique(app_id: str) -> bytes:
    """The 32-byte unique.ecc.x of the app key template for `app_id`:
    SHA-256(len32("deviceid.hardware-id.v1") ‖ "deviceid.hardware-id.v1" ‖ len32(app_id) ‖ app_id),
    with len32 a 4-byte big-endian length and app_id in UTF-8."""
    return hashlib.sha256(_len32(HARDWARE_ID_LABEL) + _len32(app_id.encode("utf-8"))).digest()


def attestation_key_unique(app_id: str) -> bytes:
    """The 32-byte unique.ecc.x of the AK template for `app_id` (one AK per app id, a primary of
    the owner hierarchy): SHA-256(len32("deviceid.attestation-key.v1") ‖ "deviceid.attestation-key.v1"
    ‖ len32(app_id) ‖ app_id), with len32 a 4-byte big-endian length and app_id in UTF-8."""
    return hashlib.sha256(_len32(ATTESTATION_KEY_LABEL) + _len32(app_id.encode("utf-8"))).digest()


def credential_key_unique(app_id: str) -> bytes:
    """The 32-byte unique.ecc.x of the credential key template for `app_id` (WebAuthn's attested
    credential): SHA-256(len32("deviceid.credential-key.v1") ‖ "deviceid.credential-key.v1" ‖
    len32(app_id) ‖ app_id)."""
    return hashlib.sha256(_len32(CREDENTIAL_KEY_LABEL) + _len32(app_id.encode("utf-8"))).digest()


def _tpm2b(data: bytes) -> bytes:
    return struct.pack(">H", len(data)) + data


def _ecc_prefix(attributes: int) -> bytes:
    # type, nameAlg, objectAttributes, authPolicy (empty), symmetric NULL,
    # scheme ECDSA/SHA-256, curve P-256, kdf NULL
    return struct.pack(
        ">HHIHHHHHH", TPM_ALG_ECC, TPM_ALG_SHA256, attributes, 0, TPM_ALG_NULL,
        TPM_ALG_ECDSA, TPM_ALG_SHA256, TPM_ECC_NIST_P256, TPM_ALG_NULL,
    )


APP_KEY_PREFIX = _ecc_prefix(APP_KEY_ATTRIBUTES)
AK_PREFIX = _ecc_prefix(AK_ATTRIBUTES)
#: The credential key: the app key's template with scheme NULL (no scheme hash follows).
CREDENTIAL_KEY_PREFIX = struct.pack(">HHIHHHHH", TPM_ALG_ECC, TPM_ALG_SHA256, APP_KEY_ATTRIBUTES, 0, TPM_ALG_NULL,
                                    TPM_ALG_NULL, TPM_ECC_NIST_P256, TPM_ALG_NULL)


def ecc_public(attributes: int, x: bytes, y: bytes) -> bytes:
    """A marshalled TPMT_PUBLIC of the frozen ECC template shape with these attributes and
    unique point (x, y). With y empty and x the template's unique it is the creation template."""
    return _ecc_prefix(attributes) + _tpm2b(x) + _tpm2b(y)


def name_of(public: bytes) -> bytes:
    """The Name of a SHA-256 object: 0x000B ‖ SHA-256(marshalled TPMT_PUBLIC)."""
    return struct.pack(">H", TPM_ALG_SHA256) + hashlib.sha256(public).digest()


def qualified_name_of_primary(hierarchy: int, name: bytes) -> bytes:
    """The qualified Name of a primary object of `hierarchy` (a TPM_RH_ handle):
    0x000B ‖ SHA-256(hierarchy as 4 bytes big-endian ‖ Name)."""
    return struct.pack(">H", TPM_ALG_SHA256) + hashlib.sha256(struct.pack(">I", hierarchy) + name).digest()


def hardware_id_from_name(name: bytes) -> str:
    """The hardware ID of an app key with this Name: the UUIDv8 (RFC 9562) made of the first
    16 bytes of SHA-256("deviceid.hardware-id.v1/name" ‖ Name), lowercase 8-4-4-4-12."""
    h = bytearray(hashlib.sha256(HARDWARE_ID_NAME_LABEL + name).digest()[:16])
    h[6] = (h[6] & 0x0F) | 0x80
    h[8] = (h[8] & 0x3F) | 0x80
    x = h.hex()
    return f"{x[0:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:32]}"


class Reader:
    """Reads TPM marshalled fields; any shortfall is Rejected("malformed")."""

    def __init__(self, data: bytes, what: str) -> None:
        self._data = data
        self._at = 0
        self._what = what

    def take(self, n: int) -> bytes:
        if self._at + n > len(self._data):
            raise Rejected("malformed", f"{self._what} is truncated")
        out = self._data[self._at:self._at + n]
        self._at += n
        return out

    def u8(self) -> int:
        return int(self.take(1)[0])

    def u16(self) -> int:
        value: int = struct.unpack(">H", self.take(2))[0]
        return value

    def u32(self) -> int:
        value: int = struct.unpack(">I", self.take(4))[0]
        return value

    def u64(self) -> int:
        value: int = struct.unpack(">Q", self.take(8))[0]
        return value

    def tpm2b(self) -> bytes:
        return self.take(self.u16())

    def end(self) -> None:
        if self._at != len(self._data):
            raise Rejected("malformed", f"{self._what} has {len(self._data) - self._at} bytes after its end")


def ecc_point_of_template(public: bytes, prefix: bytes, reason: str, what: str) -> tuple[bytes, bytes]:
    """The unique point (x, y) of a marshalled TPMT_PUBLIC that must be exactly the template
    `prefix` (every field up to unique) followed by a P-256 point. A different template is
    Rejected(reason); a broken point encoding is Rejected("malformed")."""
    if public[:len(prefix)] != prefix:
        raise Rejected(reason, f"{what} is not of the frozen template (type, nameAlg, attributes, policy or parameters differ)")
    reader = Reader(public[len(prefix):], what)
    x = reader.tpm2b()
    y = reader.tpm2b()
    reader.end()
    if not (0 < len(x) <= P256_BYTES and 0 < len(y) <= P256_BYTES):
        raise Rejected(reason, f"{what} has no P-256 public point")
    return x.rjust(P256_BYTES, b"\0"), y.rjust(P256_BYTES, b"\0")


@dataclass(frozen=True)
class CertifyInfo:
    """A parsed TPMS_ATTEST of type TPM_ST_ATTEST_CERTIFY."""

    magic: int
    type: int
    qualified_signer: bytes
    extra_data: bytes
    clock: int
    reset_count: int
    restart_count: int
    safe: bool
    firmware_version: int
    name: bytes
    qualified_name: bytes


def parse_certify_attest(attest: bytes) -> CertifyInfo:
    """Parse a TPMS_ATTEST. A wrong magic is Rejected("not-tpm-generated"), another type than
    a certification Rejected("wrong-type"), and a broken encoding Rejected("malformed")."""
    reader = Reader(attest, "TPMS_ATTEST")
    magic = reader.u32()
    if magic != TPM_GENERATED_VALUE:
        raise Rejected("not-tpm-generated", f"TPMS_ATTEST.magic is {magic:#010x}, not TPM_GENERATED_VALUE")
    st = reader.u16()
    if st != TPM_ST_ATTEST_CERTIFY:
        raise Rejected("wrong-type", f"TPMS_ATTEST.type is {st:#06x}, not TPM_ST_ATTEST_CERTIFY")
    qualified_signer = reader.tpm2b()
    extra_data = reader.tpm2b()
    clock = reader.u64()
    reset_count = reader.u32()
    restart_count = reader.u32()
    safe = reader.u8()
    firmware_version = reader.u64()
    name = reader.tpm2b()
    qualified_name = reader.tpm2b()
    reader.end()
    return CertifyInfo(magic, st, qualified_signer, extra_data, clock, reset_count, restart_count, safe != 0,
                       firmware_version, name, qualified_name)


def parse_ecdsa_signature(signature: bytes) -> tuple[int, int]:
    """(r, s) of a marshalled TPMT_SIGNATURE that must be ECDSA with SHA-256; any other
    algorithm is Rejected("signature"), a broken encoding Rejected("malformed")."""
    reader = Reader(signature, "TPMT_SIGNATURE")
    sig_alg = reader.u16()
    if sig_alg != TPM_ALG_ECDSA:
        raise Rejected("signature", f"TPMT_SIGNATURE.sigAlg is {sig_alg:#06x}, not ECDSA")
    hash_alg = reader.u16()
    if hash_alg != TPM_ALG_SHA256:
        raise Rejected("signature", f"TPMT_SIGNATURE hash is {hash_alg:#06x}, not SHA-256")
    r = reader.tpm2b()
    s = reader.tpm2b()
    reader.end()
    if not (0 < len(r) <= P256_BYTES and 0 < len(s) <= P256_BYTES):
        raise Rejected("signature", "TPMT_SIGNATURE is not a P-256 signature")
    return int.from_bytes(r, "big"), int.from_bytes(s, "big")
