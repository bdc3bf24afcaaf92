"""DeviceCheck for Linux (issue 55; docs/SERVER.md, "Device bits"): what a tenant's server may
remember of a device across every reset of it — three bits and the month each last changed, read
back in every verification and assertion answer for that tenant, with how active the device was
in the last hour and a token that lets the tenant write the bits for a while.

A device is its TPM: the CA's pseudonyms of its EKs (docs/SERVER-STATE.md, "Device link"). For a
tenant each is known by a key of its own, HMAC-SHA-256 under the CA's pseudonym key of the
tenant's name and the pseudonym, so two tenants' keys of one TPM are unlinkable without that
key. The token is sealed (AES-256-GCM) under a key derived from the pseudonym key too: no table
holds it, every worker and host that shares the pseudonym key opens it, and the tenant learns
nothing from it (a new one each time, holding no identifier in the clear)."""

from __future__ import annotations

import base64
import binascii
import datetime
import hashlib
import hmac
import os
from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence, Tuple

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from . import _chain
from ._errors import Rejected
from ._store import Store
from ._store._base import activity_at, micros_of

#: How long after the verification or assertion that answered it a token writes the device's bits
#: (Play Integrity's device recall: 14 days, time for a fraud review to end).
TOKEN_WINDOW = datetime.timedelta(days=14)
#: A token stamped this far after the verifier's clock (another host's, running ahead) still opens.
CLOCK_SKEW = datetime.timedelta(minutes=5)
#: The activity levels, as Play Integrity's: the most assertions of the last hour for each, then LEVEL_4.
LEVELS: Tuple[Tuple[int, str], ...] = ((10, "LEVEL_1"), (25, "LEVEL_2"), (50, "LEVEL_3"))
TOP_LEVEL = "LEVEL_4"

_KEY_LABEL = b"deviceid.tenant-device.v1"
_TOKEN_LABEL = b"deviceid.device-token.v1"
_TOKEN_VERSION = b"\x01"
_NONCE_BYTES = 12
_MICROSECOND = datetime.timedelta(microseconds=1)


def level(assertions: int) -> str:
    """The activity level of this many assertions in the last hour."""
    return next((name for most, name in LEVELS if assertions <= most), TOP_LEVEL)


def _length_prefixed(*parts: bytes) -> bytes:
    return b"".join(len(part).to_bytes(4, "big") + part for part in parts)


@dataclass(frozen=True)
class DeviceAnswer:
    """The "device" object of a tenant's answers: the bits, the month (YYYY-MM, UTC) each last
    changed in (None while it never did), the activity level, and the token that writes the bits."""
    bits: Tuple[bool, bool, bool]
    months: Tuple[Optional[str], Optional[str], Optional[str]]
    activity: str
    token: str

    def to_json(self) -> Dict[str, Any]:
        return {"bits": list(self.bits), "months": list(self.months), "activity": self.activity, "token": self.token}


class DeviceCheck:
    """The device bits of `store` for the tenants of a CA whose pseudonym key is `pseudonym_key`."""

    def __init__(self, store: Store, pseudonym_key: bytes) -> None:
        self._store = store
        self._pseudonym_key = pseudonym_key
        self._sealer = AESGCM(hmac.new(pseudonym_key, _TOKEN_LABEL, hashlib.sha256).digest())

    def key(self, tenant: str, ek_pseudonym: bytes) -> bytes:
        """The tenant's key of this EK pseudonym (docs/SERVER-STATE.md, "Device bits")."""
        return hmac.new(self._pseudonym_key, _length_prefixed(_KEY_LABEL, tenant.encode("utf-8")) + ek_pseudonym,
                        hashlib.sha256).digest()

    def seen(self, tenant: str, ek_pseudonym: bytes, *, assertion: bool) -> DeviceAnswer:
        """The device object for `tenant` of the device whose EK has this pseudonym, after a
        verification (`assertion`: an assertion, which the activity counts)."""
        now = _chain.utcnow()
        keys = sorted(self.key(tenant, p) for p in self._store.pseudonyms(ek_pseudonym))
        bits, activity = self._store.tenant_device(tenant, keys[0], keys, now, assertion)
        token = self._seal(tenant, keys[0], now)
        if bits is None:
            return DeviceAnswer((False, False, False), (None, None, None), level(activity_at(activity, now)), token)
        return DeviceAnswer(bits.bits, bits.months, level(activity_at(activity, now)), token)

    def write(self, tenant: str, token: str, bits: Sequence[bool]) -> DeviceAnswer:
        """Write the bits of the device `token` names for `tenant` (all false removes them);
        the device object as it now is, with the same token. Rejected "token-invalid" for a token
        this CA did not make, "tenant-mismatch" for another tenant's, "token-expired" past
        TOKEN_WINDOW."""
        if len(bits) != 3 or not all(isinstance(b, bool) for b in bits):
            raise Rejected("malformed", "bits is a list of 3 booleans")
        key = self._open(tenant, token)
        now = _chain.utcnow()
        record = self._store.write_bits(tenant, key, (bits[0], bits[1], bits[2]), now)
        _, activity = self._store.tenant_device(tenant, key, [key], now, False)
        return DeviceAnswer(record.bits, record.months, level(activity_at(activity, now)), token)

    # -- tokens: version ‖ nonce ‖ AES-256-GCM(issued µs ‖ device key ‖ tenant) ---------------

    def _seal(self, tenant: str, key: bytes, now: datetime.datetime) -> str:
        nonce = os.urandom(_NONCE_BYTES)
        plain = micros_of(now).to_bytes(8, "big") + key + tenant.encode("utf-8")
        sealed = _TOKEN_VERSION + nonce + self._sealer.encrypt(nonce, plain, _TOKEN_LABEL)
        return base64.urlsafe_b64encode(sealed).rstrip(b"=").decode("ascii")

    def _open(self, tenant: str, token: str) -> bytes:
        if not isinstance(token, str) or len(token) > 1024:
            raise Rejected("malformed", "token is a string this service made")
        try:
            sealed = base64.urlsafe_b64decode(token.encode("ascii") + b"=" * (-len(token) % 4))
        except (UnicodeEncodeError, binascii.Error, ValueError):
            raise Rejected("token-invalid", "the token is not base64url") from None
        if not sealed.startswith(_TOKEN_VERSION) or len(sealed) < 1 + _NONCE_BYTES + 16 + 40:
            raise Rejected("token-invalid", "the token is not one this service made")
        nonce, body = sealed[1:1 + _NONCE_BYTES], sealed[1 + _NONCE_BYTES:]
        try:
            plain = self._sealer.decrypt(nonce, body, _TOKEN_LABEL)
        except InvalidTag:
            raise Rejected("token-invalid", "the token is not one this service made (or was changed)") from None
        issued, key, owner = int.from_bytes(plain[:8], "big"), plain[8:40], plain[40:]
        if owner != tenant.encode("utf-8"):
            raise Rejected("tenant-mismatch", "the token is another tenant's")
        now = micros_of(_chain.utcnow())
        if issued > now + CLOCK_SKEW // _MICROSECOND:
            raise Rejected("token-invalid", "the token is stamped in the future")
        if now - issued > TOKEN_WINDOW // _MICROSECOND:
            raise Rejected("token-expired", f"the token is older than {TOKEN_WINDOW.days} days: write the bits with "
                                            "the token of a newer verification of the device")
        return key
