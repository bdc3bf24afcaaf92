"""MemoryStore: the Store of one process, in dictionaries under one lock."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import threading
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

from .. import _chain
from ._base import (ATTESTATION, DEFAULT_LIMIT, Activity, Ban, CertificateRecord, CredentialRecord, DeviceBits, IssueLimit,
                    Limit, Limited, NonceState, PendingChallenge, PublishedCRL, Store, Tenant, counted_issue,
                    tenant_refusal as _tenant_refusal, counted, hour_of, written_bits)

_MISSING = object()


class NonceRecord(NamedTuple):
    """An issued nonce (docs/SERVER-STATE.md, "Records")."""
    expires: datetime.datetime
    used: bool
    purpose: str = ATTESTATION
    app_id: Optional[str] = None


class StoreFull(RuntimeError):
    """A MemoryStore holds as many nonces, challenges or credentials as it was allowed."""


class MemoryStore(Store):
    """The state of one process. `max_nonces`, `max_pending` and `max_credentials` bound what it holds (StoreFull
    beyond them, after expired entries are dropped). nonces() and challenges() list what it holds,
    so that the command line can carry it from one process to the next in a file."""

    def __init__(self, *, max_nonces: int = 1_000_000, max_pending: int = 100_000,
                 max_credentials: int = 1_000_000) -> None:
        self._max_nonces = max_nonces
        self._max_pending = max_pending
        self._max_credentials = max_credentials
        self._credentials: Dict[bytes, CredentialRecord] = {}
        self._nonces: Dict[bytes, NonceRecord] = {}
        self._pending: Dict[str, PendingChallenge] = {}
        self._certificates: Dict[int, CertificateRecord] = {}
        self._devices: Dict[bytes, bytes] = {}  # EK pseudonym → its device's name
        self._bans: Dict[Tuple[bytes, str], Ban] = {}  # (EK pseudonym, app id) → ban
        self._tenants: Dict[str, Tenant] = {}
        self._issues: Dict[str, Tuple[datetime.datetime, int]] = {}  # tenant → (window start, issued)
        self._bits: Dict[Tuple[str, bytes], DeviceBits] = {}
        self._activity: Dict[Tuple[str, bytes], Activity] = {}
        self._receipts: Dict[bytes, tuple[bytes, datetime.datetime]] = {}
        self._limit = DEFAULT_LIMIT
        self._revocation_generation = 0
        self._published_crl: Optional[PublishedCRL] = None
        self._lock = threading.RLock()
        #: While an atomic() block is open (by the thread holding the lock): how to undo each change.
        self._undo: Optional[List[Callable[[], None]]] = None

    # -- transactions: the lock held through the block, each change journalled to be undone ----

    @contextlib.contextmanager
    def atomic(self) -> Iterator[None]:
        with self._lock:
            if self._undo is not None:  # nested: part of the enclosing block
                yield
                return
            self._undo = []
            try:
                yield
            except BaseException:
                for undo in reversed(self._undo):
                    undo()
                raise
            finally:
                self._undo = None

    def _set(self, table: Dict[Any, Any], key: Any, value: Any) -> None:
        self._journal(table, key)
        table[key] = value

    def _pop(self, table: Dict[Any, Any], key: Any) -> Any:
        self._journal(table, key)
        return table.pop(key, None)

    def _journal(self, table: Dict[Any, Any], key: Any) -> None:
        if self._undo is not None:
            old = table.get(key, _MISSING)
            self._undo.append(lambda: table.pop(key, None) if old is _MISSING else table.__setitem__(key, old))

    # -- the operations ----------------------------------------------------------------------

    def add_nonce(self, nonce: bytes, expires: datetime.datetime, purpose: str = ATTESTATION,
                  app_id: Optional[str] = None) -> None:
        with self._lock:
            if len(self._nonces) >= self._max_nonces:
                self._purge(_chain.utcnow())
                if len(self._nonces) >= self._max_nonces:
                    raise StoreFull("too many outstanding nonces")
            self._set(self._nonces, nonce, NonceRecord(expires, False, purpose, app_id))

    def use_nonce(self, nonce: bytes, now: datetime.datetime, purpose: str = ATTESTATION,
                  app_id: Optional[str] = None) -> NonceState:
        with self._lock:
            entry = self._nonces.get(nonce)
            if entry is None or entry.purpose != purpose or entry.app_id not in (None, app_id):
                return NonceState.UNKNOWN
            self._set(self._nonces, nonce, entry._replace(used=True))
        if entry.used:
            return NonceState.USED
        return NonceState.EXPIRED if entry.expires < now else NonceState.FRESH

    def add_challenge(self, challenge_id: str, pending: PendingChallenge, now: Optional[datetime.datetime] = None,
                      most: int = 0) -> Optional[Limited]:
        with self._lock:
            if most and now is not None:
                held = sorted(p.expires for p in self._pending.values()
                              if p.ek_pseudonym == pending.ek_pseudonym and p.expires >= now)
                if len(held) >= most:
                    return Limited(held[len(held) - most])
            if len(self._pending) >= self._max_pending:
                self._purge(_chain.utcnow())
                if len(self._pending) >= self._max_pending:
                    raise StoreFull("too many pending enrolment challenges")
            self._set(self._pending, challenge_id, pending)
        return None

    def take_challenge(self, challenge_id: str, now: datetime.datetime) -> Optional[PendingChallenge]:
        with self._lock:
            pending: Optional[PendingChallenge] = self._pop(self._pending, challenge_id)
        return pending if pending is not None and pending.expires >= now else None

    def link(self, ek_pseudonyms: Sequence[bytes]) -> bytes:
        with self._lock:
            devices = {self._devices.get(p, p) for p in ek_pseudonyms}
            name = min(devices)
            for pseudonym, device in list(self._devices.items()):
                if device in devices:
                    self._set(self._devices, pseudonym, name)
            for pseudonym in ek_pseudonyms:
                self._set(self._devices, pseudonym, name)
        return name

    def device(self, ek_pseudonym: bytes) -> bytes:
        with self._lock:
            return self._devices.get(ek_pseudonym, ek_pseudonym)

    def _members(self, ek_pseudonym: bytes) -> set[bytes]:
        device = self._devices.get(ek_pseudonym, ek_pseudonym)
        return {p for p, d in self._devices.items() if d == device} | {ek_pseudonym}

    def limited(self, ek_pseudonym: bytes, app_id: str, limit: Limit, now: datetime.datetime) -> Optional[Limited]:
        with self._lock:
            return self._limited(ek_pseudonym, app_id, limit, now)

    def _limited(self, ek_pseudonym: bytes, app_id: str, limit: Limit, now: datetime.datetime) -> Optional[Limited]:
        start, members = now - limit.window, self._members(ek_pseudonym)
        recent = sorted((r.issued for r in self._certificates.values()
                         if r.ek_pseudonym in members and r.app_id == app_id and start < r.issued),
                        reverse=True)
        return Limited(recent[limit.enrolments - 1] + limit.window) if len(recent) >= limit.enrolments else None

    def add_certificate(self, record: CertificateRecord, limit: Limit) -> Optional[Union[Limited, Ban]]:
        with self._lock:
            refusal = self._banned(record.ek_pseudonym, record.app_id) or self._limited(
                record.ek_pseudonym, record.app_id, limit, record.issued)
            if refusal is None:
                if record.ek_pseudonym not in self._devices:
                    self._set(self._devices, record.ek_pseudonym, record.ek_pseudonym)
                self._set(self._certificates, record.serial, record)
        return refusal

    def enrolments(self, ek_pseudonym: bytes, app_id: str, since: datetime.datetime) -> int:
        with self._lock:
            members = self._members(ek_pseudonym)
            return sum(1 for r in self._certificates.values()
                       if r.ek_pseudonym in members and r.app_id == app_id and r.issued > since)

    def banned(self, ek_pseudonym: bytes, app_id: str) -> Optional[Ban]:
        with self._lock:
            return self._banned(ek_pseudonym, app_id)

    def _banned(self, ek_pseudonym: bytes, app_id: str) -> Optional[Ban]:
        bans = [self._bans[p, app_id] for p in sorted(self._members(ek_pseudonym)) if (p, app_id) in self._bans]
        return min(bans, key=lambda b: (b.since, b.serial)) if bans else None

    def certificate(self, serial: int) -> Optional[CertificateRecord]:
        with self._lock:
            return self._certificates.get(serial)

    def revoke(self, serial: int, reason: str, now: datetime.datetime) -> bool:
        with self._lock:
            record = self._certificates.get(serial)
            if record is None:
                return False
            members, changed = self._members(record.ek_pseudonym), False
            for other in list(self._certificates.values()):
                if other.ek_pseudonym in members and other.app_id == record.app_id and other.revoked is None:
                    self._set(self._certificates, other.serial, dataclasses.replace(other, revoked=now, revocation_reason=reason))
                    changed = True
            if self._banned(record.ek_pseudonym, record.app_id) is None:
                self._set(self._bans, (record.ek_pseudonym, record.app_id), Ban(now, reason, serial))
                changed = True
            if changed:
                self._revocation_generation += 1
        return changed

    def lift(self, serial: int) -> int:
        with self._lock:
            record = self._certificates.get(serial)
            if record is None:
                return 0
            lifted = [(p, record.app_id) for p in self._members(record.ek_pseudonym) if (p, record.app_id) in self._bans]
            for key in lifted:
                self._pop(self._bans, key)
        return len(lifted)

    def revoked(self, now: datetime.datetime) -> List[Tuple[int, datetime.datetime]]:
        with self._lock:
            return sorted((r.serial, r.revoked) for r in self._certificates.values()
                          if r.revoked is not None and r.not_after >= now)

    def revocation_generation(self) -> int:
        with self._lock:
            return self._revocation_generation

    def publish_crl(self, crl: PublishedCRL) -> None:
        with self._lock:
            if crl.newer_than(self._published_crl):
                self._published_crl = crl

    def published_crl(self) -> Optional[PublishedCRL]:
        with self._lock:
            return self._published_crl

    def add_credential(self, record: CredentialRecord) -> Optional[CredentialRecord]:
        with self._lock:
            known = self._credentials.get(record.credential_id)
            if known is None:
                if len(self._credentials) >= self._max_credentials:
                    raise StoreFull("too many registered credentials")
                stored = record
            elif known.app_id != record.app_id:
                return None
            else:
                stored = dataclasses.replace(known, ak_name=record.ak_name, ak_serial=record.ak_serial,
                                             ak_anchor=record.ak_anchor, ak_not_after=record.ak_not_after,
                                             counter=max(known.counter, record.counter))
            self._set(self._credentials, record.credential_id, stored)
        return stored

    def credential(self, credential_id: bytes) -> Optional[CredentialRecord]:
        with self._lock:
            return self._credentials.get(credential_id)

    def credential_and_certificate(
            self, credential_id: bytes) -> Optional[Tuple[CredentialRecord, Optional[CertificateRecord]]]:
        with self._lock:
            known = self._credentials.get(credential_id)
            return None if known is None else (known, self._certificates.get(known.ak_serial))

    def advance_counter(self, credential_id: bytes, counter: int, now: datetime.datetime) -> bool:
        with self._lock:
            known = self._credentials.get(credential_id)
            if known is None:
                return False
            if counter > known.counter:
                self._set(self._credentials, credential_id, dataclasses.replace(known, counter=counter))
                return True
            if known.counter_failed is None:
                self._set(self._credentials, credential_id, dataclasses.replace(known, counter_failed=now))
        return False

    def add_receipt(self, key: bytes, answer: bytes, expires: datetime.datetime) -> None:
        with self._lock:
            self._set(self._receipts, key, (answer, expires))

    def receipt(self, key: bytes, now: datetime.datetime) -> Optional[bytes]:
        with self._lock:
            kept = self._receipts.get(key)
        return kept[0] if kept is not None and kept[1] >= now else None

    def limit(self) -> Limit:
        with self._lock:
            return self._limit

    def set_limit(self, limit: Limit) -> None:
        with self._lock:
            self._limit = limit

    def add_tenant(self, tenant: Tenant) -> Optional[str]:
        with self._lock:
            refusal = _tenant_refusal(tenant, list(self._tenants.values()))
            if refusal is None:
                self._set(self._tenants, tenant.name, tenant)
        return refusal

    def tenant(self, key_digest: bytes) -> Optional[Tenant]:
        with self._lock:
            return next((t for t in self._tenants.values() if t.key_digest == key_digest), None)

    def tenants(self) -> List[Tenant]:
        with self._lock:
            return sorted(self._tenants.values(), key=lambda t: t.name)

    def remove_tenant(self, name: str) -> bool:
        with self._lock:
            self._pop(self._issues, name)
            return self._pop(self._tenants, name) is not None

    def set_tenant_limit(self, name: str, limit: IssueLimit) -> bool:
        with self._lock:
            tenant = self._tenants.get(name)
            if tenant is not None:
                self._set(self._tenants, name, dataclasses.replace(tenant, limit=limit))
            return tenant is not None

    def add_tenant_nonce(self, nonce: bytes, expires: datetime.datetime, purpose: str, app_id: Optional[str],
                         tenant: str, limit: IssueLimit, now: datetime.datetime) -> Optional[Limited]:
        with self.atomic():
            counted = counted_issue(self._issues.get(tenant), limit, now)
            if isinstance(counted, Limited):
                return counted
            self._set(self._issues, tenant, counted)
            self.add_nonce(nonce, expires, purpose, app_id)
        return None

    def device_bits(self, tenant: str, keys: Sequence[bytes]) -> Optional[DeviceBits]:
        with self._lock:
            found = [(self._bits[tenant, k].updated, k) for k in keys if (tenant, k) in self._bits]
            return self._bits[tenant, max(found)[1]] if found else None

    def write_bits(self, tenant: str, key: bytes, bits: Tuple[bool, bool, bool], now: datetime.datetime) -> DeviceBits:
        with self._lock:
            record = written_bits(self._bits.get((tenant, key)), bits, now)
            if any(bits):
                self._set(self._bits, (tenant, key), record)
            else:
                self._pop(self._bits, (tenant, key))
        return record

    def pseudonyms(self, ek_pseudonym: bytes) -> List[bytes]:
        with self._lock:
            return sorted(self._members(ek_pseudonym))

    def tenant_device(self, tenant: str, first: bytes, keys: Sequence[bytes], now: datetime.datetime,
                      count: bool) -> Tuple[Optional[DeviceBits], Optional[Activity]]:
        with self._lock:
            if count:
                self._set(self._activity, (tenant, first), counted(self._activity.get((tenant, first)), now))
            return self.device_bits(tenant, keys), self._activity.get((tenant, first))

    def forget_bits(self, before: datetime.datetime) -> int:
        with self._lock:
            old = [k for k, b in self._bits.items() if b.updated < before]
            for k in old:
                self._pop(self._bits, k)
        return len(old)

    def purge(self, now: datetime.datetime) -> None:
        with self._lock:
            self._purge(now)

    def _purge(self, now: datetime.datetime) -> None:
        for nonce in [n for n, entry in self._nonces.items() if entry.expires < now]:
            self._pop(self._nonces, nonce)
        for challenge_id in [i for i, p in self._pending.items() if p.expires < now]:
            self._pop(self._pending, challenge_id)
        for key in [k for k, (_, expires) in self._receipts.items() if expires < now]:
            self._pop(self._receipts, key)
        for pair in [k for k, a in self._activity.items() if a.hour < hour_of(now) - 1]:
            self._pop(self._activity, pair)

    # -- what the command line carries between processes ------------------------------------

    def nonces(self) -> Dict[bytes, NonceRecord]:
        """Every nonce held."""
        with self._lock:
            return dict(self._nonces)

    def merge_nonces(self, nonces: Dict[bytes, NonceRecord]) -> None:
        """Add nonces (a nonce used in either stays used)."""
        with self._lock:
            for nonce, entry in nonces.items():
                current = self._nonces.get(nonce)
                self._set(self._nonces, nonce, entry._replace(used=entry.used or (current is not None and current.used)))

    def challenges(self) -> Dict[str, PendingChallenge]:
        """Every pending challenge held."""
        with self._lock:
            return dict(self._pending)

    def merge_challenges(self, challenges: Dict[str, PendingChallenge]) -> None:
        """Add pending challenges."""
        with self._lock:
            for challenge_id, pending in challenges.items():
                self._set(self._pending, challenge_id, pending)
