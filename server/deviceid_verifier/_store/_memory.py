"""MemoryStore: the Store of one process, in dictionaries under one lock."""

from __future__ import annotations

import dataclasses
import datetime
import threading
from typing import Dict, List, Optional, Tuple

from .. import _chain
from ._base import DEFAULT_LIMIT, CertificateRecord, CredentialRecord, Limit, Limited, NonceState, PendingChallenge, Store


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
        self._nonces: Dict[bytes, Tuple[datetime.datetime, bool]] = {}
        self._pending: Dict[str, PendingChallenge] = {}
        self._certificates: Dict[int, CertificateRecord] = {}
        self._limit = DEFAULT_LIMIT
        self._lock = threading.Lock()

    def add_nonce(self, nonce: bytes, expires: datetime.datetime) -> None:
        with self._lock:
            if len(self._nonces) >= self._max_nonces:
                self._purge(_chain.utcnow())
                if len(self._nonces) >= self._max_nonces:
                    raise StoreFull("too many outstanding nonces")
            self._nonces[nonce] = (expires, False)

    def use_nonce(self, nonce: bytes, now: datetime.datetime) -> NonceState:
        with self._lock:
            entry = self._nonces.get(nonce)
            if entry is None:
                return NonceState.UNKNOWN
            expires, used = entry
            self._nonces[nonce] = (expires, True)
        if used:
            return NonceState.USED
        return NonceState.EXPIRED if expires < now else NonceState.FRESH

    def add_challenge(self, challenge_id: str, pending: PendingChallenge) -> None:
        with self._lock:
            if len(self._pending) >= self._max_pending:
                self._purge(_chain.utcnow())
                if len(self._pending) >= self._max_pending:
                    raise StoreFull("too many pending enrolment challenges")
            self._pending[challenge_id] = pending

    def take_challenge(self, challenge_id: str, now: datetime.datetime) -> Optional[PendingChallenge]:
        with self._lock:
            pending = self._pending.pop(challenge_id, None)
        return pending if pending is not None and pending.expires >= now else None

    def limited(self, ek_pseudonym: bytes, app_id: str, limit: Limit, now: datetime.datetime) -> Optional[Limited]:
        with self._lock:
            return self._limited(ek_pseudonym, app_id, limit, now)

    def _limited(self, ek_pseudonym: bytes, app_id: str, limit: Limit, now: datetime.datetime) -> Optional[Limited]:
        start = now - limit.window
        recent = sorted((r.issued for r in self._certificates.values()
                         if r.ek_pseudonym == ek_pseudonym and r.app_id == app_id and start < r.issued),
                        reverse=True)
        return Limited(recent[limit.enrolments - 1] + limit.window) if len(recent) >= limit.enrolments else None

    def add_certificate(self, record: CertificateRecord, limit: Limit) -> Optional[Limited]:
        with self._lock:
            limited = self._limited(record.ek_pseudonym, record.app_id, limit, record.issued)
            if limited is None:
                self._certificates[record.serial] = record
        return limited

    def enrolments(self, ek_pseudonym: bytes, app_id: str, since: datetime.datetime) -> int:
        with self._lock:
            return sum(1 for r in self._certificates.values()
                       if r.ek_pseudonym == ek_pseudonym and r.app_id == app_id and r.issued > since)

    def certificate(self, serial: int) -> Optional[CertificateRecord]:
        with self._lock:
            return self._certificates.get(serial)

    def revoke(self, serial: int, reason: str, now: datetime.datetime) -> bool:
        with self._lock:
            record = self._certificates.get(serial)
            if record is None or record.revoked is not None:
                return False
            self._certificates[serial] = CertificateRecord(
                record.serial, record.ek_pseudonym, record.app_id, record.ak_name, record.issued, record.not_after,
                now, reason)
        return True

    def revoked(self, now: datetime.datetime) -> List[CertificateRecord]:
        with self._lock:
            return sorted((r for r in self._certificates.values() if r.revoked is not None and r.not_after >= now),
                          key=lambda r: r.serial)

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
                                             counter=max(known.counter, record.counter))
            self._credentials[record.credential_id] = stored
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
                self._credentials[credential_id] = dataclasses.replace(known, counter=counter)
                return True
            if known.counter_failed is None:
                self._credentials[credential_id] = dataclasses.replace(known, counter_failed=now)
        return False

    def limit(self) -> Limit:
        with self._lock:
            return self._limit

    def set_limit(self, limit: Limit) -> None:
        with self._lock:
            self._limit = limit

    def purge(self, now: datetime.datetime) -> None:
        with self._lock:
            self._purge(now)

    def _purge(self, now: datetime.datetime) -> None:
        for nonce in [n for n, (expires, _) in self._nonces.items() if expires < now]:
            del self._nonces[nonce]
        for challenge_id in [i for i, p in self._pending.items() if p.expires < now]:
            del self._pending[challenge_id]

    # -- what the command line carries between processes ------------------------------------

    def nonces(self) -> Dict[bytes, Tuple[datetime.datetime, bool]]:
        """Every nonce held: nonce → (expires, used)."""
        with self._lock:
            return dict(self._nonces)

    def merge_nonces(self, nonces: Dict[bytes, Tuple[datetime.datetime, bool]]) -> None:
        """Add nonces (a nonce used in either stays used)."""
        with self._lock:
            for nonce, (expires, used) in nonces.items():
                current = self._nonces.get(nonce)
                self._nonces[nonce] = (expires, used or (current is not None and current[1]))

    def challenges(self) -> Dict[str, PendingChallenge]:
        """Every pending challenge held."""
        with self._lock:
            return dict(self._pending)

    def merge_challenges(self, challenges: Dict[str, PendingChallenge]) -> None:
        """Add pending challenges."""
        with self._lock:
            self._pending.update(challenges)
