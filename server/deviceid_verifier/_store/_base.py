"""The Store interface and its records (docs/SERVER-STATE.md, "Operations"). Times are naive
UTC datetimes, as everywhere in this package."""

from __future__ import annotations

import abc
import contextlib
import datetime
import enum
from dataclasses import dataclass
from typing import FrozenSet, Iterator, List, Optional, Sequence, Tuple, Union


class NonceState(enum.Enum):
    """What use_nonce found."""
    FRESH = "fresh"        # issued, unused, not expired: now used
    USED = "used"          # issued and already used
    EXPIRED = "expired"    # issued, unused, past its lifetime: now used
    UNKNOWN = "unknown"    # never issued here (for this purpose and app id), or purged after its lifetime


#: The purposes a nonce is issued for (docs/SERVER-STATE.md, "Purpose and app"): the evidence of
#: verifyAttestation, and the client data of registerCredential and verifyAssertion.
ATTESTATION = "attestation"
WEBAUTHN = "webauthn"

#: The most enrolment challenges one EK pseudonym may have pending (unexpired), whatever their app ids.
PENDING_PER_EK = 10

#: What spend_assertion answers (and keeps as an assertion's receipt): its counter rose, or it did not.
COUNTER_ACCEPTED, COUNTER_REFUSED = b"accepted", b"counter"


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
    #: The other EKs the request offered whose certificates chain, each with a secret sealed to it:
    #: (EK kind name, EK pseudonym, secret). Those the response answers are proven to be in the
    #: TPM of ek_pseudonym's EK and link to its device (docs/SERVER-STATE.md, invariant 11).
    linked: Tuple[Tuple[str, bytes, bytes], ...] = ()


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
    """At most `enrolments` certificates per device (TPM) and app id in any `window`."""
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
    #: SHA-256 of the SubjectPublicKeyInfo of the trusted CA the AK certificate's chain ended at,
    #: and the earliest notAfter on that chain below it: what every assertion re-checks (the CA
    #: still trusted, the certificate not expired). None for a credential registered before
    #: migration 0006.
    ak_anchor: Optional[bytes] = None
    ak_not_after: Optional[datetime.datetime] = None


@dataclass(frozen=True)
class PublishedCRL:
    """The CRL the service serves: DER, built at `built` with the revocations up to `generation`."""
    generation: int
    built: datetime.datetime
    der: bytes

    def newer_than(self, other: Optional["PublishedCRL"]) -> bool:
        return other is None or (self.generation, self.built) > (other.generation, other.built)


#: The limit of a new store: 5 enrolments per device (TPM) and app id a day.
DEFAULT_LIMIT = Limit(5, datetime.timedelta(days=1))


@dataclass(frozen=True)
class Limited:
    """add_certificate's refusal: the pair is at its limit until `retry_at`."""
    retry_at: datetime.datetime


@dataclass(frozen=True)
class IssueLimit:
    """At most `issued` nonces and WebAuthn challenges issued to a tenant in each `window` (the
    windows: consecutive periods of that length from 1970-01-01 UTC)."""
    issued: int
    window: datetime.timedelta

    def __post_init__(self) -> None:
        if self.issued < 1 or self.window < datetime.timedelta(seconds=1) or self.window.microseconds:
            raise ValueError("an issue limit needs at least one issue and a window of whole seconds, at least one")

    def window_of(self, now: datetime.datetime) -> Tuple[datetime.datetime, datetime.datetime]:
        """The start and end of the window holding `now`."""
        length = int(self.window.total_seconds())
        start = _EPOCH + datetime.timedelta(seconds=(now - _EPOCH) // datetime.timedelta(seconds=length) * length)
        return start, start + self.window


_EPOCH = datetime.datetime(1970, 1, 1)
#: A tenant's issue limit unless an operator sets another: 100 a second on average, in windows of a minute.
DEFAULT_ISSUE_LIMIT = IssueLimit(6000, datetime.timedelta(seconds=60))


def counted_issue(kept: Optional[Tuple[datetime.datetime, int]], limit: IssueLimit,
                  now: datetime.datetime) -> Union[Tuple[datetime.datetime, int], Limited]:
    """A tenant's issues (window start, issued) after one more at `now`, or Limited (the one rule
    of add_tenant_nonce, for the stores that do not count in SQL, and the model)."""
    start, end = limit.window_of(now)
    if kept is None or kept[0] < start:
        return start, 1
    if kept[1] >= limit.issued:
        return Limited(end)
    return kept[0], kept[1] + 1


@dataclass(frozen=True)
class Tenant:
    """A developer account whose app servers use the service (docs/SERVER-STATE.md): its app ids,
    the SHA-256 digest of its API key, when it was added, and its issue limit."""
    name: str
    app_ids: Tuple[str, ...]
    key_digest: bytes
    created: datetime.datetime
    limit: IssueLimit = DEFAULT_ISSUE_LIMIT


@dataclass(frozen=True)
class DeviceBits:
    """A tenant's bits of a device (docs/SERVER-STATE.md, "Device bits"): three bits, the month
    (YYYY-MM, UTC) each last changed in (None while it never did), and when the record last changed."""
    bits: Tuple[bool, bool, bool]
    months: Tuple[Optional[str], Optional[str], Optional[str]]
    updated: datetime.datetime


#: What a device without a record reads as.
NO_BITS = DeviceBits((False, False, False), (None, None, None), datetime.datetime.min)


def written_bits(before: Optional[DeviceBits], bits: Tuple[bool, bool, bool], now: datetime.datetime) -> DeviceBits:
    """The record write_bits leaves after `before` (NO_BITS when None): each changed bit takes
    now's month, the others keep theirs (the one rule, for every store and the model)."""
    old = before or NO_BITS
    month = now.strftime("%Y-%m")
    months = tuple(month if new != was else kept for new, was, kept in zip(bits, old.bits, old.months))
    return DeviceBits(bits, (months[0], months[1], months[2]), now)


#: An activity record's bucket: one hour, in microseconds.
HOUR_MICROS = 3_600_000_000


@dataclass(frozen=True)
class Activity:
    """A tenant's record of a device's assertions (docs/SERVER-STATE.md, "Device activity"): the
    hour (microseconds since 1970 ÷ HOUR_MICROS) of the last one counted, the assertions counted in
    that hour, and those of the hour before it."""
    hour: int
    count: int
    previous: int


def hour_of(when: datetime.datetime) -> int:
    """The activity bucket `when` (naive UTC) falls in."""
    return micros_of(when) // HOUR_MICROS


def micros_of(when: datetime.datetime) -> int:
    """A naive UTC datetime as microseconds since 1970."""
    delta = when - datetime.datetime(1970, 1, 1)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def counted(before: Optional[Activity], now: datetime.datetime) -> Activity:
    """The record after one more assertion at `now` (the one rule, for every store and the model):
    the same hour (or a later one a host ahead of this clock wrote) adds one; the next hour moves
    the count to `previous`; a later one starts again."""
    hour = hour_of(now)
    if before is None or before.hour < hour - 1:
        return Activity(hour, 1, 0)
    if before.hour == hour - 1:
        return Activity(hour, 1, before.count)
    return Activity(before.hour, before.count + 1, before.previous)


def activity_at(record: Optional[Activity], now: datetime.datetime) -> int:
    """The assertions of the last hour at `now`, estimated from `record`: the current hour's count
    plus the hour before's scaled by the part of the current hour still to come, rounded down."""
    if record is None:
        return 0
    hour = hour_of(now)
    left = HOUR_MICROS - (micros_of(now) - hour * HOUR_MICROS)  # of the current hour, still to come
    if record.hour >= hour:
        return record.count + record.previous * left // HOUR_MICROS
    if record.hour == hour - 1:
        return record.count * left // HOUR_MICROS
    return 0


def tenant_refusal(tenant: Tenant, existing: Sequence[Tenant]) -> Optional[str]:
    """Why `tenant` cannot join `existing` (add_tenant's answer), or None."""
    if any(t.name == tenant.name for t in existing):
        return f"a tenant named {tenant.name!r} exists"
    for other in existing:
        shared = sorted(set(other.app_ids) & set(tenant.app_ids))
        if shared:
            return f"the app id {shared[0]!r} is the tenant {other.name!r}'s"
    return None


@dataclass(frozen=True)
class CheckedAssertion:
    """What checked_spend_assertion read (the credential, its AK certificate's record, the ban of
    that record's device for its app id), all at one moment, and what its spending answered:
    None when the credential did not pass the check, and nothing was written."""
    credential: Optional["CredentialRecord"]
    certificate: Optional["CertificateRecord"]
    ban: Optional["Ban"]
    spent: Optional[Tuple[NonceState, Optional[bytes]]]


@dataclass(frozen=True)
class Ban:
    """A device revoked for an app id (docs/SERVER-STATE.md, invariant 6): since when, why, and
    the serial number whose revocation made it."""
    since: datetime.datetime
    reason: Optional[str]
    serial: int


class Store(abc.ABC):
    """What a PrivacyCA and a Verifier remember. Every method is one atomic step, safe to call
    from several threads, processes and hosts at once on one store (docs/SERVER-STATE.md,
    "Invariants")."""

    @abc.abstractmethod
    def atomic(self) -> contextlib.AbstractContextManager[None]:
        """One transaction of the operations this thread calls inside the block: committed when it
        ends, rolled back when it raises (then as if none had been called). Blocks may nest."""

    @abc.abstractmethod
    def add_nonce(self, nonce: bytes, expires: datetime.datetime, purpose: str = ATTESTATION,
                  app_id: Optional[str] = None) -> None:
        """Remember an issued nonce, unused, for `purpose` and, if given, `app_id` only."""

    @abc.abstractmethod
    def use_nonce(self, nonce: bytes, now: datetime.datetime, purpose: str = ATTESTATION,
                  app_id: Optional[str] = None) -> NonceState:
        """Use `nonce` up and say what it was before (FRESH at most once per nonce); UNKNOWN, and
        unchanged, when it was issued for another purpose or bound to an app id other than `app_id`."""

    @abc.abstractmethod
    def add_challenge(self, challenge_id: str, pending: PendingChallenge, now: Optional[datetime.datetime] = None,
                      most: int = 0) -> Optional[Limited]:
        """Remember a pending enrolment challenge; with `most`, only if its EK pseudonym has fewer
        than `most` challenges unexpired at `now` (else Limited until the oldest expires)."""

    @abc.abstractmethod
    def take_challenge(self, challenge_id: str, now: datetime.datetime) -> Optional[PendingChallenge]:
        """Remove the challenge and return it if it had not expired (at most once per id)."""

    @abc.abstractmethod
    def link(self, ek_pseudonyms: Sequence[bytes]) -> bytes:
        """Make these pseudonyms, proven to be EKs of one TPM, and every pseudonym linked to any
        of them one device; return its name."""

    @abc.abstractmethod
    def device(self, ek_pseudonym: bytes) -> bytes:
        """The name of the device of this pseudonym (itself when never linked)."""

    @abc.abstractmethod
    def limited(self, ek_pseudonym: bytes, app_id: str, limit: Limit, now: datetime.datetime) -> Optional[Limited]:
        """Whether this pseudonym's device and app id are at `limit` at `now` (what add_certificate
        would refuse for the limit)."""

    @abc.abstractmethod
    def add_certificate(self, record: CertificateRecord, limit: Limit) -> Optional[Union[Limited, Ban]]:
        """Record an issued certificate (and link its pseudonym to itself if it has no device)
        unless its device is banned for its app id (the Ban), or the device and app id already
        have limit.enrolments certificates issued within limit.window before record.issued;
        None when recorded."""

    @abc.abstractmethod
    def enrolments(self, ek_pseudonym: bytes, app_id: str, since: datetime.datetime) -> int:
        """How many certificates of this pseudonym's device and app id were issued after `since`."""

    @abc.abstractmethod
    def banned(self, ek_pseudonym: bytes, app_id: str) -> Optional[Ban]:
        """The ban of this pseudonym's device for this app id (of any of its pseudonyms), if any."""

    @abc.abstractmethod
    def certificate(self, serial: int) -> Optional[CertificateRecord]:
        """The record of the certificate with this serial number, if this CA issued it."""

    @abc.abstractmethod
    def revoke(self, serial: int, reason: str, now: datetime.datetime) -> bool:
        """Revoke the device of a known certificate for its app id (monotonic): every certificate
        of that device and app id not yet revoked, and a ban of the pair unless it is banned. False
        if the serial is unknown or nothing changed (all revoked and banned before)."""

    @abc.abstractmethod
    def lift(self, serial: int) -> int:
        """Lift the bans of the device of this certificate for its app id (an operator's action):
        the device may enrol again; certificates stay revoked. How many bans were removed."""

    @abc.abstractmethod
    def revoked(self, now: datetime.datetime) -> List[Tuple[int, datetime.datetime]]:
        """(serial, revoked at) of the revoked certificates not yet past their not-after at
        `now`, by serial: what a CRL lists."""

    @abc.abstractmethod
    def revocation_generation(self) -> int:
        """A number every revocation raises by one, in its transaction: a CRL built at a
        generation lacks no revocation as long as the generation is unchanged."""

    @abc.abstractmethod
    def publish_crl(self, crl: PublishedCRL) -> None:
        """Keep `crl` for every worker, unless the one kept is as new (by generation, then built)."""

    @abc.abstractmethod
    def published_crl(self) -> Optional[PublishedCRL]:
        """The CRL publish_crl() kept, or None."""

    @abc.abstractmethod
    def add_credential(self, record: CredentialRecord) -> Optional[CredentialRecord]:
        """Register a credential, or register it again: a known credential id takes the record's
        AK Name, serial, anchor and not after, keeps the higher of the two counters, its
        registration time and its counter_failed. Returns the record as stored; None if the id
        is registered for another app id (nothing changed)."""

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

    def spend_assertion(self, nonce: bytes, now: datetime.datetime, app_id: str, credential_id: bytes, counter: int,
                        key: Optional[bytes], keep_until: datetime.datetime) -> Tuple[NonceState, Optional[bytes]]:
        """Every write of an assertion, as one transaction (docs/SERVER-STATE.md, "Spending"): use up
        the WebAuthn challenge `nonce` for `app_id`; if it was FRESH, advance the credential's
        counter to `counter` and, with `key`, keep the outcome (COUNTER_ACCEPTED or COUNTER_REFUSED)
        as its receipt until `keep_until`. Answers the challenge's state and the outcome; for a
        challenge USED before, the receipt kept under `key` (None without one). This composition
        under atomic() is every store's answer; a store may run it in fewer round trips."""
        with self.atomic():
            state = self.use_nonce(nonce, now, WEBAUTHN, app_id)
            if state is NonceState.USED and key is not None:
                return state, self.receipt(key, now)
            if state is not NonceState.FRESH:
                return state, None
            answer = COUNTER_ACCEPTED if self.advance_counter(credential_id, counter, now) else COUNTER_REFUSED
            if key is not None:
                self.add_receipt(key, answer, keep_until)
            return state, answer

    def checked_spend_assertion(self, credential_id: bytes, app_id: str, cose_key: bytes, anchors: FrozenSet[bytes],
                                nonce: bytes, now: datetime.datetime, counter: int, key: Optional[bytes],
                                keep_until: datetime.datetime) -> CheckedAssertion:
        """An assertion's read and its writes as one transaction, for a verifier that checked the
        signature with `cose_key`, the credential's key, already (a credential's app id and key never
        change): credential_and_certificate(credential_id) and, with a record, banned(its pseudonym,
        its app id); then, only if the credential passes — it is of `app_id` and `cose_key`, its AK anchor is one of
        `anchors` (the CAs trusted at `now` whose revocations are the store's alone), its AK not
        after is not before `now`, and its certificate's record, if any, is neither revoked nor of
        a device banned for the record's app id — spend_assertion(nonce, now, app_id, …). The
        verifier re-checks what was read and so names any refusal; a credential that fails the
        check here is left as it was. This composition is every store's answer; a store may run it
        in fewer round trips."""
        with self.atomic():
            found = self.credential_and_certificate(credential_id)
            if found is None:
                return CheckedAssertion(None, None, None, None)
            credential, certificate = found
            ban = None if certificate is None else self.banned(certificate.ek_pseudonym, certificate.app_id)
            passes = (credential.app_id == app_id and credential.cose_key == cose_key and credential.ak_anchor in anchors
                      and credential.ak_not_after is not None and credential.ak_not_after >= now
                      and (certificate is None or certificate.revoked is None and ban is None))
            spent = self.spend_assertion(nonce, now, app_id, credential_id, counter, key, keep_until) if passes else None
            return CheckedAssertion(credential, certificate, ban, spent)

    @abc.abstractmethod
    def add_receipt(self, key: bytes, answer: bytes, expires: datetime.datetime) -> None:
        """Keep the answer given to the spending request whose digest is `key`, until `expires`."""

    @abc.abstractmethod
    def receipt(self, key: bytes, now: datetime.datetime) -> Optional[bytes]:
        """The answer kept under `key`, unless it is past its expiry."""

    @abc.abstractmethod
    def limit(self) -> Limit:
        """The enrolment limit in force."""

    @abc.abstractmethod
    def set_limit(self, limit: Limit) -> None:
        """Change the enrolment limit (an operator's action)."""

    @abc.abstractmethod
    def add_tenant(self, tenant: Tenant) -> Optional[str]:
        """Add a tenant; None when added, else why not (its name exists, or an app id is another's)."""

    @abc.abstractmethod
    def tenant(self, key_digest: bytes) -> Optional[Tenant]:
        """The tenant whose API key has this SHA-256 digest."""

    @abc.abstractmethod
    def tenants(self) -> List[Tenant]:
        """Every tenant, by name."""

    @abc.abstractmethod
    def remove_tenant(self, name: str) -> bool:
        """Remove the tenant of this name (its app ids are free again); False if there is none."""

    @abc.abstractmethod
    def set_tenant_limit(self, name: str, limit: IssueLimit) -> bool:
        """Change the tenant's issue limit (an operator's action); False if there is no such tenant."""

    @abc.abstractmethod
    def add_tenant_nonce(self, nonce: bytes, expires: datetime.datetime, purpose: str, app_id: Optional[str],
                         tenant: str, limit: IssueLimit, now: datetime.datetime) -> Optional[Limited]:
        """add_nonce, counted against the tenant's issue `limit` in the same transaction: Limited
        until the end of now's window, and nothing added, when the tenant was issued limit.issued
        in it (or in a later window another host's clock began); docs/SERVER-STATE.md, invariant 15."""

    @abc.abstractmethod
    def device_bits(self, tenant: str, keys: Sequence[bytes]) -> Optional[DeviceBits]:
        """Of the tenant's records of these device keys (a device's EKs'), the one updated last (of
        two updated at once, the one of the greater key)."""

    @abc.abstractmethod
    def write_bits(self, tenant: str, key: bytes, bits: Tuple[bool, bool, bool], now: datetime.datetime) -> DeviceBits:
        """Write the tenant's bits of this device key (written_bits; all false removes the record,
        answered with its months); the record as it now is."""

    @abc.abstractmethod
    def pseudonyms(self, ek_pseudonym: bytes) -> List[bytes]:
        """The pseudonyms of this pseudonym's device (itself and every one linked to it), sorted."""

    @abc.abstractmethod
    def tenant_device(self, tenant: str, first: bytes, keys: Sequence[bytes], now: datetime.datetime,
                      count: bool) -> Tuple[Optional[DeviceBits], Optional[Activity]]:
        """With `count`, one more assertion in the activity record of (tenant, `first`) (counted());
        then the tenant's bits of the device of these keys (as device_bits) and that record."""

    @abc.abstractmethod
    def forget_bits(self, before: datetime.datetime) -> int:
        """Remove every record of device bits not updated since `before`; how many."""

    @abc.abstractmethod
    def purge(self, now: datetime.datetime) -> None:
        """Forget nonces, challenges and receipts past their expiry, and activity records of hours
        before the last two."""

    def check_writable(self) -> None:
        """Raise StoreUnavailable when the store answers but would refuse every write (a
        PostgreSQL standby after a failover): the health check's second question. Stores that
        cannot be read-only answer nothing."""

    def close(self) -> None:
        """Release connections (the store may be used again: it reconnects)."""
