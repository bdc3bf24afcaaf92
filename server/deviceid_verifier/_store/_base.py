"""The Store interface and its records (docs/SERVER-STATE.md, "Operations"). Times are naive
UTC datetimes, as everywhere in this package."""

from __future__ import annotations

import abc
import datetime
import enum
from dataclasses import dataclass
from typing import List, Optional, Tuple


class NonceState(enum.Enum):
    """What use_nonce found."""
    FRESH = "fresh"        # issued, unused, not expired: now used
    USED = "used"          # issued and already used
    EXPIRED = "expired"    # issued, unused, past its lifetime: now used
    UNKNOWN = "unknown"    # never issued here, or purged after its lifetime


@dataclass(frozen=True)
class PendingChallenge:
    """An enrolment challenge waiting for its answer."""
    secret: bytes
    ak_public: bytes
    app_id: str
    ek_pseudonym: bytes
    expires: datetime.datetime
    #: The EK certificate's TPM directoryName (tcg-at-tpmManufacturer, Model, Version) as RFC
    #: 4514 text, which the AK certificate repeats (TCG AIK profile); empty when it had none.
    tpm_device: str = ""


@dataclass(frozen=True)
class CertificateRecord:
    """An AK certificate the CA issued: one finished enrolment."""
    serial: int
    ek_pseudonym: bytes
    app_id: str
    ak_name: bytes
    issued: datetime.datetime
    not_after: datetime.datetime
    revoked: Optional[datetime.datetime] = None
    revocation_reason: Optional[str] = None


@dataclass(frozen=True)
class Limit:
    """At most `enrolments` certificates per EK pseudonym and app id in any `window`."""
    enrolments: int
    window: datetime.timedelta

    def __post_init__(self) -> None:
        if self.enrolments < 1 or self.window <= datetime.timedelta(0):
            raise ValueError("a limit needs at least one enrolment and a positive window")


@dataclass(frozen=True)
class CredentialRecord:
    """A registered App Attest (WebAuthn) credential and the highest assertion counter accepted."""
    credential_id: bytes
    app_id: str
    cose_key: bytes
    ak_name: bytes
    ak_serial: int
    counter: int
    registered: datetime.datetime
    #: When an assertion's counter first failed to rise above `counter` (a clone of the TPM may
    #: exist); sticky: once set, never cleared or moved.
    counter_failed: Optional[datetime.datetime] = None


#: The limit of a new store: 5 enrolments per EK and app id a day.
DEFAULT_LIMIT = Limit(5, datetime.timedelta(days=1))


@dataclass(frozen=True)
class Limited:
    """add_certificate's refusal: the pair is at its limit until `retry_at`."""
    retry_at: datetime.datetime


class Store(abc.ABC):
    """What a PrivacyCA and a Verifier remember. Every method is one atomic step, safe to call
    from several threads, processes and hosts at once on one store (docs/SERVER-STATE.md,
    "Invariants")."""

    @abc.abstractmethod
    def add_nonce(self, nonce: bytes, expires: datetime.datetime) -> None:
        """Remember an issued nonce, unused."""

    @abc.abstractmethod
    def use_nonce(self, nonce: bytes, now: datetime.datetime) -> NonceState:
        """Use `nonce` up and say what it was before (FRESH at most once per nonce)."""

    @abc.abstractmethod
    def add_challenge(self, challenge_id: str, pending: PendingChallenge) -> None:
        """Remember a pending enrolment challenge."""

    @abc.abstractmethod
    def take_challenge(self, challenge_id: str, now: datetime.datetime) -> Optional[PendingChallenge]:
        """Remove the challenge and return it if it had not expired (at most once per id)."""

    @abc.abstractmethod
    def limited(self, ek_pseudonym: bytes, app_id: str, limit: Limit, now: datetime.datetime) -> Optional[Limited]:
        """Whether this pseudonym and app id are at `limit` at `now` (what add_certificate would refuse)."""

    @abc.abstractmethod
    def add_certificate(self, record: CertificateRecord, limit: Limit) -> Optional[Limited]:
        """Record an issued certificate unless its (pseudonym, app id) already has limit.enrolments
        certificates issued within limit.window before record.issued; None when recorded."""

    @abc.abstractmethod
    def enrolments(self, ek_pseudonym: bytes, app_id: str, since: datetime.datetime) -> int:
        """How many certificates of this pseudonym and app id were issued after `since`."""

    @abc.abstractmethod
    def certificate(self, serial: int) -> Optional[CertificateRecord]:
        """The record of the certificate with this serial number, if this CA issued it."""

    @abc.abstractmethod
    def revoke(self, serial: int, reason: str, now: datetime.datetime) -> bool:
        """Revoke a known certificate (monotonic); False if the serial is unknown or already revoked."""

    @abc.abstractmethod
    def revoked(self, now: datetime.datetime) -> List[CertificateRecord]:
        """The revoked certificates not yet past their not-after, by serial."""

    @abc.abstractmethod
    def add_credential(self, record: CredentialRecord) -> Optional[CredentialRecord]:
        """Register a credential, or register it again: a known credential id takes the record's
        AK Name and serial, keeps the higher of the two counters, its registration time and its
        counter_failed. Returns the record as stored; None if the id is registered for another
        app id (nothing changed)."""

    @abc.abstractmethod
    def credential(self, credential_id: bytes) -> Optional[CredentialRecord]:
        """The record of a registered credential."""

    @abc.abstractmethod
    def credential_and_certificate(
            self, credential_id: bytes) -> Optional[Tuple[CredentialRecord, Optional[CertificateRecord]]]:
        """The record of a registered credential and the record of its AK certificate (by the
        credential's ak_serial; None if this CA did not issue it), read at one moment."""

    @abc.abstractmethod
    def advance_counter(self, credential_id: bytes, counter: int, now: datetime.datetime) -> bool:
        """Raise the credential's counter to `counter` if it is above the one stored (of racing
        calls with one value, exactly one); otherwise set counter_failed to `now` unless it is
        set. False when the counter did not rise (or the credential is unknown)."""

    @abc.abstractmethod
    def limit(self) -> Limit:
        """The enrolment limit in force."""

    @abc.abstractmethod
    def set_limit(self, limit: Limit) -> None:
        """Change the enrolment limit (an operator's action)."""

    @abc.abstractmethod
    def purge(self, now: datetime.datetime) -> None:
        """Forget nonces and challenges past their expiry."""

    def check_writable(self) -> None:
        """Raise StoreUnavailable when the store answers but would refuse every write (a
        PostgreSQL standby after a failover): the health check's second question. Stores that
        cannot be read-only answer nothing."""

    def close(self) -> None:
        """Release connections (the store may be used again: it reconnects)."""
