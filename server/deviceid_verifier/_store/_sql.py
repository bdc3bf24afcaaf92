"""SQLStore: the Store on an SQL database, shared by SQLite and PostgreSQL. Each operation is one
transaction of statements written so that the database, not this process, decides races
(docs/SERVER-STATE.md, "Invariants"). A Dialect supplies what differs."""

from __future__ import annotations

import abc
import contextlib
import dataclasses
import datetime
import os
import threading
import json
from typing import Any, Iterator, List, Optional, Sequence, Tuple, Type, Union

from ._base import (ATTESTATION, Activity, Ban, CertificateRecord, CredentialRecord, DeviceBits, IssueLimit, Limit, Limited,
                    NonceState, PendingChallenge, PublishedCRL, Store, Tenant, tenant_refusal, hour_of, written_bits)
from ._migrations import MIGRATIONS

_EPOCH = datetime.datetime(1970, 1, 1)
#: The names of the serializing locks (8 bytes each): migrate(), and a merge of devices by link().
_MIGRATIONS_LOCK = b"deviceid"
_DEVICES_LOCK = b"devices\0"
_TENANTS_LOCK = b"tenants\0"


class StoreUnavailable(Exception):
    """The database cannot be reached or refused the operation (an operator's problem, not the
    client's: the service answers 503)."""


def micros(when: datetime.datetime) -> int:
    """A naive UTC datetime as microseconds since the epoch."""
    delta = when - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(value: int) -> datetime.datetime:
    return _EPOCH + datetime.timedelta(microseconds=value)


class Cursor(abc.ABC):
    """The part of a DB-API cursor SQLStore uses, with `?` placeholders whatever the dialect."""

    @abc.abstractmethod
    def execute(self, sql: str, params: Sequence[Any] = ()) -> None: ...

    @abc.abstractmethod
    def fetchone(self) -> Optional[Tuple[Any, ...]]: ...

    @abc.abstractmethod
    def fetchall(self) -> List[Tuple[Any, ...]]: ...


#: Connections a child process inherited through fork(): kept referenced and never used or
#: closed there, since closing one would end the parent's session (PostgreSQL's Terminate goes
#: down the socket both share).
_INHERITED: List[Any] = []


class SQLStore(Store):
    """A Store on a database reached through connect(): one connection per thread and process,
    or one per operation (connection_per_operation). A connection is never used across fork()."""

    #: How the dialect spells a binary column, the clause that locks a selected row, and the
    #: aggregate that joins texts with commas.
    blob_type = "BLOB"
    for_update = ""
    text_aggregate = "group_concat({}, ',')"
    #: Whether each operation opens and closes its own connection (SQLite: then no connection is
    #: open when the process forks, which SQLite's locks do not survive).
    connection_per_operation = False

    def __init__(self) -> None:
        self._local = threading.local()

    # -- what a dialect provides --------------------------------------------------------------

    @abc.abstractmethod
    def _connect(self) -> Any:
        """A new connection."""

    @abc.abstractmethod
    def _transaction(self, connection: Any, *, write: bool) -> contextlib.AbstractContextManager[Cursor]:
        """A transaction on `connection` (taking the write lock first where the database has one)."""

    def _statements(self, connection: Any) -> contextlib.AbstractContextManager[Cursor]:
        """Where each statement may be a transaction of its own (_tx(autocommit=True)); by default
        a whole transaction, as _transaction(write=True)."""
        return self._transaction(connection, write=True)

    @abc.abstractmethod
    def _serialize(self, cursor: Cursor, name: bytes, *, shared: bool = False) -> None:
        """Hold the lock of this 8-byte name across processes until the transaction ends: alone,
        or `shared` with others that hold it shared."""

    @abc.abstractmethod
    def _unavailable(self) -> Tuple[Type[BaseException], ...]:
        """The driver's exceptions that mean the database cannot answer now."""

    # -- connections and transactions ---------------------------------------------------------

    def _connection(self) -> Any:
        held = getattr(self._local, "held", None)
        if held is not None and held[0] != os.getpid():
            _INHERITED.append(held[1])  # the parent's: neither used nor closed here
            held = None
        if held is None:
            held = (os.getpid(), self._connect())
            self._local.held = held
        return held[1]

    @contextlib.contextmanager
    def atomic(self) -> Iterator[None]:
        with self._tx():
            yield

    @contextlib.contextmanager
    def _tx(self, *, write: bool = True, autocommit: bool = False) -> Iterator[Cursor]:
        """One operation's statements, as one transaction (inside atomic(): its transaction). With
        `autocommit`, the dialect may run each statement as a transaction of its own (PostgreSQL:
        one round trip instead of three, BEGIN, the statement, COMMIT): only for an operation that,
        on every path, changes nothing before the last statement it runs, so that no one can see
        it half done (docs/SERVER-STATE.md, "Operations")."""
        joined: Optional[Cursor] = getattr(self._local, "cursor", None)
        if joined is not None:  # inside atomic(): its transaction
            yield joined
            return
        try:
            if self.connection_per_operation:
                connection = self._connect()
                try:
                    with self._transaction(connection, write=write) as cursor:
                        yield from self._joined(cursor)
                finally:
                    connection.close()
            else:
                connection = self._connection()
                if autocommit:
                    with self._statements(connection) as cursor:
                        yield cursor
                else:
                    with self._transaction(connection, write=write) as cursor:
                        yield from self._joined(cursor)
        except self._unavailable() as e:
            self._drop()
            raise StoreUnavailable(f"the database did not answer: {e}") from None

    def _joined(self, cursor: Cursor) -> Iterator[Cursor]:
        """Yield `cursor`, the one every operation of this thread uses until the transaction ends."""
        self._local.cursor = cursor
        try:
            yield cursor
        finally:
            self._local.cursor = None

    def _drop(self) -> None:
        held = getattr(self._local, "held", None)
        self._local.held = None
        if held is not None and held[0] == os.getpid():
            with contextlib.suppress(Exception):
                held[1].close()

    def close(self) -> None:
        self._drop()

    # -- schema -------------------------------------------------------------------------------

    def migrate(self, until: Optional[str] = None) -> List[str]:
        """Apply the migrations not yet applied, in order, up to and including `until` (by
        default all); each in its own transaction. Returns the names applied now."""
        names = [name for name, _ in MIGRATIONS]
        if until is not None and until not in names:
            raise ValueError(f"no migration is named {until!r}")
        applied_now = []
        for name, statements in MIGRATIONS:
            with self._tx() as cursor:
                self._serialize(cursor, _MIGRATIONS_LOCK)
                cursor.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, "
                               "applied BIGINT NOT NULL)")
                cursor.execute("SELECT 1 FROM schema_migrations WHERE name = ?", (name,))
                if cursor.fetchone() is None:
                    for statement in statements:
                        cursor.execute(statement.replace("BLOB", self.blob_type))
                    cursor.execute("INSERT INTO schema_migrations (name, applied) VALUES (?, ?)",
                                   (name, micros(datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None))))
                    applied_now.append(name)
            if name == until:
                break
        return applied_now

    def applied_migrations(self) -> List[str]:
        """The names of the migrations applied, in order."""
        with self._tx(write=False) as cursor:
            cursor.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, "
                           "applied BIGINT NOT NULL)")
            cursor.execute("SELECT name FROM schema_migrations ORDER BY name")
            return [row[0] for row in cursor.fetchall()]

    # -- nonces -------------------------------------------------------------------------------

    def add_nonce(self, nonce: bytes, expires: datetime.datetime, purpose: str = ATTESTATION,
                  app_id: Optional[str] = None) -> None:
        with self._tx(autocommit=True) as cursor:
            cursor.execute("INSERT INTO nonces (nonce, expires, used, purpose, app_id) VALUES (?, ?, ?, ?, ?)",
                           (nonce, micros(expires), False, purpose, app_id))

    #: A nonce this purpose and app id may spend: one issued for them, or (purpose NULL) before 0007.
    _SPENDABLE = "nonce = ? AND (purpose IS NULL OR purpose = ? AND (app_id IS NULL OR app_id = ?))"

    def use_nonce(self, nonce: bytes, now: datetime.datetime, purpose: str = ATTESTATION,
                  app_id: Optional[str] = None) -> NonceState:
        spendable = (nonce, purpose, app_id)
        with self._tx(autocommit=True) as cursor:
            # One conditional update: of racing calls, exactly one changes the row (invariant 1).
            cursor.execute(f"UPDATE nonces SET used = ? WHERE {self._SPENDABLE} AND used = ? RETURNING expires",
                           (True, *spendable, False))
            row = cursor.fetchone()
            if row is not None:
                return NonceState.EXPIRED if from_micros(row[0]) < now else NonceState.FRESH
            cursor.execute(f"SELECT 1 FROM nonces WHERE {self._SPENDABLE}", spendable)
            return NonceState.UNKNOWN if cursor.fetchone() is None else NonceState.USED

    # -- challenges ---------------------------------------------------------------------------

    def add_challenge(self, challenge_id: str, pending: PendingChallenge, now: Optional[datetime.datetime] = None,
                      most: int = 0) -> Optional[Limited]:
        with self._tx() as cursor:
            if most and now is not None:
                # The EK's lock row, then count and insert under it (invariant 10).
                cursor.execute("INSERT INTO challenge_eks (ek_pseudonym) VALUES (?) ON CONFLICT DO NOTHING",
                               (pending.ek_pseudonym,))
                cursor.execute("SELECT 1 FROM challenge_eks WHERE ek_pseudonym = ?" + self.for_update,
                               (pending.ek_pseudonym,))
                cursor.fetchone()
                cursor.execute("SELECT expires FROM challenges WHERE ek_pseudonym = ? AND expires >= ? "
                               "ORDER BY expires", (pending.ek_pseudonym, micros(now)))
                held = [row[0] for row in cursor.fetchall()]
                if len(held) >= most:
                    return Limited(from_micros(held[len(held) - most]))
            cursor.execute("INSERT INTO challenges (id, secret, ak_public, app_id, ek_pseudonym, expires, tpm_device, "
                           "linked) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                           (challenge_id, pending.secret, pending.ak_public, pending.app_id, pending.ek_pseudonym,
                            micros(pending.expires), pending.tpm_device, _linked_text(pending.linked)))
        return None

    def take_challenge(self, challenge_id: str, now: datetime.datetime) -> Optional[PendingChallenge]:
        with self._tx(autocommit=True) as cursor:
            cursor.execute("DELETE FROM challenges WHERE id = ? "
                           "RETURNING secret, ak_public, app_id, ek_pseudonym, expires, tpm_device, linked",
                           (challenge_id,))
            row = cursor.fetchone()
        if row is None:
            return None
        pending = PendingChallenge(bytes(row[0]), bytes(row[1]), row[2], bytes(row[3]), from_micros(row[4]),
                                   row[5] or "", _linked_of(row[6]))
        return pending if pending.expires >= now else None

    # -- certificates -------------------------------------------------------------------------

    _CERTIFICATE_COLUMNS = "serial, ek_pseudonym, app_id, ak_name, issued, not_after, revoked, revocation_reason"

    @staticmethod
    def _record(row: Tuple[Any, ...]) -> CertificateRecord:
        return CertificateRecord(int(row[0], 16), bytes(row[1]), row[2], bytes(row[3]), from_micros(row[4]),
                                 from_micros(row[5]), None if row[6] is None else from_micros(row[6]), row[7])

    # -- devices ------------------------------------------------------------------------------

    @staticmethod
    def _device(cursor: Cursor, ek_pseudonym: bytes) -> bytes:
        cursor.execute("SELECT device FROM device_links WHERE ek_pseudonym = ?", (ek_pseudonym,))
        row = cursor.fetchone()
        return ek_pseudonym if row is None else bytes(row[0])

    def link(self, ek_pseudonyms: Sequence[bytes]) -> bytes:
        pseudonyms = sorted(set(ek_pseudonyms))
        with self._tx(write=False) as cursor:  # the common case, a device linked before: nothing to write
            cursor.execute(f"SELECT device FROM device_links WHERE ek_pseudonym IN {self._in(pseudonyms)}", pseudonyms)
            rows = cursor.fetchall()
        if len(rows) == len(pseudonyms) and len({bytes(row[0]) for row in rows}) == 1:
            return bytes(rows[0][0])
        with self._tx() as cursor:
            # One merge at a time (invariant 11): two merges that share a device see each other's result.
            self._serialize(cursor, _DEVICES_LOCK)
            devices = {self._device(cursor, p) for p in pseudonyms}
            name = min(devices)
            for device in sorted(devices - {name}):
                cursor.execute("UPDATE device_links SET device = ? WHERE device = ?", (name, device))
            for pseudonym in pseudonyms:
                cursor.execute("INSERT INTO device_links (ek_pseudonym, device) VALUES (?, ?) "
                               "ON CONFLICT (ek_pseudonym) DO UPDATE SET device = excluded.device", (pseudonym, name))
        return name

    def device(self, ek_pseudonym: bytes) -> bytes:
        with self._tx(write=False) as cursor:
            return self._device(cursor, ek_pseudonym)

    #: The pseudonyms of the device of the pseudonym bound twice: linked ones, and itself when unlinked.
    _MEMBERS = ("SELECT ek_pseudonym FROM device_links WHERE device = "
                "(SELECT coalesce((SELECT device FROM device_links WHERE ek_pseudonym = ?), ?))")

    def _members(self, cursor: Cursor, ek_pseudonym: bytes) -> List[bytes]:
        cursor.execute(self._MEMBERS, (ek_pseudonym, ek_pseudonym))
        return sorted({bytes(row[0]) for row in cursor.fetchall()} | {ek_pseudonym})

    @staticmethod
    def _in(values: Sequence[Any]) -> str:
        return f"({', '.join('?' * len(values))})"

    def _limited(self, cursor: Cursor, ek_pseudonym: bytes, app_id: str, limit: Limit,
                 now: datetime.datetime) -> Optional[Limited]:
        end = micros(now)
        window = micros(_EPOCH + limit.window)
        members = self._members(cursor, ek_pseudonym)
        # no upper bound: a record stamped later by a host whose clock runs ahead still counts
        cursor.execute(f"SELECT issued FROM certificates WHERE ek_pseudonym IN {self._in(members)} AND app_id = ? "
                       "AND issued > ? ORDER BY issued DESC", (*members, app_id, end - window))
        recent = [row[0] for row in cursor.fetchall()]
        return Limited(from_micros(recent[limit.enrolments - 1] + window)) if len(recent) >= limit.enrolments else None

    def limited(self, ek_pseudonym: bytes, app_id: str, limit: Limit, now: datetime.datetime) -> Optional[Limited]:
        with self._tx(write=False) as cursor:
            return self._limited(cursor, ek_pseudonym, app_id, limit, now)

    def _lock_pair(self, cursor: Cursor, ek_pseudonym: bytes, app_id: str) -> None:
        """The (device, app id) lock row of invariants 3 and 6, held until the transaction ends;
        with the devices lock shared, so that no merge renames the device meanwhile."""
        self._serialize(cursor, _DEVICES_LOCK, shared=True)
        pair = (self._device(cursor, ek_pseudonym), app_id)
        cursor.execute("INSERT INTO enrolment_pairs (ek_pseudonym, app_id) VALUES (?, ?) ON CONFLICT DO NOTHING", pair)
        cursor.execute("SELECT 1 FROM enrolment_pairs WHERE ek_pseudonym = ? AND app_id = ?" + self.for_update, pair)
        cursor.fetchone()

    def add_certificate(self, record: CertificateRecord, limit: Limit) -> Optional[Union[Limited, Ban]]:
        with self._tx() as cursor:
            # The pair's lock row, then check, count and insert under it (invariants 3 and 6).
            self._lock_pair(cursor, record.ek_pseudonym, record.app_id)
            refusal = self._banned(cursor, record.ek_pseudonym, record.app_id) or self._limited(
                cursor, record.ek_pseudonym, record.app_id, limit, record.issued)
            if refusal is not None:
                return refusal
            cursor.execute("INSERT INTO device_links (ek_pseudonym, device) VALUES (?, ?) ON CONFLICT DO NOTHING",
                           (record.ek_pseudonym, record.ek_pseudonym))
            cursor.execute(f"INSERT INTO certificates ({self._CERTIFICATE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                           (format(record.serial, "x"), record.ek_pseudonym, record.app_id, record.ak_name, micros(record.issued),
                            micros(record.not_after), None if record.revoked is None else micros(record.revoked),
                            record.revocation_reason))
        return None

    def enrolments(self, ek_pseudonym: bytes, app_id: str, since: datetime.datetime) -> int:
        with self._tx(write=False, autocommit=True) as cursor:
            members = self._members(cursor, ek_pseudonym)
            cursor.execute(f"SELECT count(*) FROM certificates WHERE ek_pseudonym IN {self._in(members)} "
                           "AND app_id = ? AND issued > ?", (*members, app_id, micros(since)))
            row = cursor.fetchone()
        return int(row[0]) if row is not None else 0

    def _banned(self, cursor: Cursor, ek_pseudonym: bytes, app_id: str) -> Optional[Ban]:
        # one statement: on every assertion's path
        cursor.execute(f"SELECT since, reason, serial FROM bans WHERE app_id = ? AND (ek_pseudonym = ? OR "
                       f"ek_pseudonym IN ({self._MEMBERS}))", (app_id, ek_pseudonym, ek_pseudonym, ek_pseudonym))
        bans = [Ban(from_micros(row[0]), row[1], int(row[2], 16)) for row in cursor.fetchall()]
        return min(bans, key=lambda b: (b.since, b.serial)) if bans else None

    def banned(self, ek_pseudonym: bytes, app_id: str) -> Optional[Ban]:
        with self._tx(write=False, autocommit=True) as cursor:
            return self._banned(cursor, ek_pseudonym, app_id)

    def _certificate(self, cursor: Cursor, serial: int) -> Optional[CertificateRecord]:
        cursor.execute(f"SELECT {self._CERTIFICATE_COLUMNS} FROM certificates WHERE serial = ?", (format(serial, "x"),))
        row = cursor.fetchone()
        return None if row is None else self._record(row)

    def certificate(self, serial: int) -> Optional[CertificateRecord]:
        with self._tx(write=False, autocommit=True) as cursor:
            return self._certificate(cursor, serial)

    def revoke(self, serial: int, reason: str, now: datetime.datetime) -> bool:
        with self._tx() as cursor:
            record = self._certificate(cursor, serial)
            if record is None:
                return False
            self._lock_pair(cursor, record.ek_pseudonym, record.app_id)
            members = self._members(cursor, record.ek_pseudonym)
            cursor.execute(f"UPDATE certificates SET revoked = ?, revocation_reason = ? WHERE ek_pseudonym IN "
                           f"{self._in(members)} AND app_id = ? AND revoked IS NULL RETURNING serial",
                           (micros(now), reason, *members, record.app_id))
            changed = bool(cursor.fetchall())
            if self._banned(cursor, record.ek_pseudonym, record.app_id) is None:
                cursor.execute("INSERT INTO bans (ek_pseudonym, app_id, since, reason, serial) VALUES (?, ?, ?, ?, ?)",
                               (record.ek_pseudonym, record.app_id, micros(now), reason, format(serial, "x")))
                changed = True
            if changed:  # in the revocation's transaction: whoever sees the revocation sees the new generation
                cursor.execute("UPDATE revocation_generation SET generation = generation + 1 WHERE id = 1")
        return changed

    def lift(self, serial: int) -> int:
        with self._tx() as cursor:
            record = self._certificate(cursor, serial)
            if record is None:
                return 0
            self._lock_pair(cursor, record.ek_pseudonym, record.app_id)
            members = self._members(cursor, record.ek_pseudonym)
            cursor.execute(f"DELETE FROM bans WHERE ek_pseudonym IN {self._in(members)} AND app_id = ? "
                           "RETURNING serial", (*members, record.app_id))
            return len(cursor.fetchall())

    def revoked(self, now: datetime.datetime) -> List[Tuple[int, datetime.datetime]]:
        with self._tx(write=False) as cursor:
            # One text value, not a row per certificate: psycopg's ctypes libpq costs 3.5 µs a value
            # (100,000 rows of 8 columns took 5 s; this, 0.3 s).
            joined = self.text_aggregate.format("serial || ' ' || revoked")
            cursor.execute(f"SELECT {joined} FROM certificates WHERE revoked IS NOT NULL AND not_after >= ?",
                           (micros(now),))
            row = cursor.fetchone()
        if row is None or not row[0]:
            return []
        pairs = (item.split(" ") for item in row[0].split(","))
        return sorted((int(serial, 16), from_micros(int(revoked))) for serial, revoked in pairs)

    def revocation_generation(self) -> int:
        with self._tx(write=False) as cursor:
            cursor.execute("SELECT generation FROM revocation_generation WHERE id = 1")
            row = cursor.fetchone()
        if row is None:
            raise StoreUnavailable("the database has no revocation generation row: run migrate")
        return int(row[0])

    def publish_crl(self, crl: PublishedCRL) -> None:
        with self._tx() as cursor:
            # one statement: of racing publications, the newer (generation, built) stays
            cursor.execute("INSERT INTO published_crl (id, generation, built, der) VALUES (1, ?, ?, ?) "
                           "ON CONFLICT (id) DO UPDATE SET generation = excluded.generation, built = excluded.built, "
                           "der = excluded.der WHERE excluded.generation > published_crl.generation OR "
                           "(excluded.generation = published_crl.generation AND excluded.built > published_crl.built)",
                           (crl.generation, micros(crl.built), crl.der))

    def published_crl(self) -> Optional[PublishedCRL]:
        with self._tx(write=False) as cursor:
            cursor.execute("SELECT generation, built, der FROM published_crl WHERE id = 1")
            row = cursor.fetchone()
        return None if row is None else PublishedCRL(int(row[0]), from_micros(row[1]), bytes(row[2]))

    # -- App Attest credentials ---------------------------------------------------------------

    _CREDENTIAL_COLUMNS = ("credential_id, app_id, cose_key, ak_name, ak_serial, counter, registered, counter_failed, "
                           "ak_anchor, ak_not_after")

    @staticmethod
    def _credential(row: Tuple[Any, ...]) -> CredentialRecord:
        return CredentialRecord(bytes(row[0]), row[1], bytes(row[2]), bytes(row[3]), int(row[4], 16), int(row[5]),
                                from_micros(row[6]), None if row[7] is None else from_micros(row[7]),
                                None if row[8] is None else bytes(row[8]),
                                None if row[9] is None else from_micros(row[9]))

    def add_credential(self, record: CredentialRecord) -> Optional[CredentialRecord]:
        with self._tx() as cursor:
            # One statement: of racing registrations of one id, the database orders the writes.
            cursor.execute(f"INSERT INTO credentials ({self._CREDENTIAL_COLUMNS}) "
                           "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                           "ON CONFLICT (credential_id) DO UPDATE SET ak_name = excluded.ak_name, "
                           "ak_serial = excluded.ak_serial, ak_anchor = excluded.ak_anchor, "
                           "ak_not_after = excluded.ak_not_after, "
                           "counter = CASE WHEN excluded.counter > credentials.counter "
                           "THEN excluded.counter ELSE credentials.counter END "
                           "WHERE credentials.app_id = excluded.app_id "
                           f"RETURNING {self._CREDENTIAL_COLUMNS}",
                           (record.credential_id, record.app_id, record.cose_key, record.ak_name,
                            format(record.ak_serial, "x"), record.counter, micros(record.registered),
                            None if record.counter_failed is None else micros(record.counter_failed),
                            record.ak_anchor, None if record.ak_not_after is None else micros(record.ak_not_after)))
            row = cursor.fetchone()
        return None if row is None else self._credential(row)

    def credential(self, credential_id: bytes) -> Optional[CredentialRecord]:
        with self._tx(write=False, autocommit=True) as cursor:
            cursor.execute(f"SELECT {self._CREDENTIAL_COLUMNS} FROM credentials WHERE credential_id = ?",
                           (credential_id,))
            row = cursor.fetchone()
        return None if row is None else self._credential(row)

    def credential_and_certificate(
            self, credential_id: bytes) -> Optional[Tuple[CredentialRecord, Optional[CertificateRecord]]]:
        credential = ", ".join("c." + name for name in self._CREDENTIAL_COLUMNS.split(", "))
        certificate = ", ".join("k." + name for name in self._CERTIFICATE_COLUMNS.split(", "))
        with self._tx(write=False, autocommit=True) as cursor:
            # One statement: the credential and its certificate's revocation seen at one moment.
            cursor.execute(f"SELECT {credential}, {certificate} FROM credentials c "
                           "LEFT JOIN certificates k ON k.serial = c.ak_serial WHERE c.credential_id = ?",
                           (credential_id,))
            row = cursor.fetchone()
        if row is None:
            return None
        width = len(self._CREDENTIAL_COLUMNS.split(", "))
        return self._credential(row[:width]), None if row[width] is None else self._record(row[width:])

    def advance_counter(self, credential_id: bytes, counter: int, now: datetime.datetime) -> bool:
        with self._tx(autocommit=True) as cursor:
            # One conditional update: of racing calls with one counter, exactly one raises it (invariant 8).
            cursor.execute("UPDATE credentials SET counter = ? WHERE credential_id = ? AND counter < ? "
                           "RETURNING counter", (counter, credential_id, counter))
            if cursor.fetchone() is not None:
                return True
            cursor.execute("UPDATE credentials SET counter_failed = ? WHERE credential_id = ? AND counter_failed IS NULL",
                           (micros(now), credential_id))
        return False

    # -- receipts -----------------------------------------------------------------------------

    def add_receipt(self, key: bytes, answer: bytes, expires: datetime.datetime) -> None:
        with self._tx() as cursor:
            cursor.execute("INSERT INTO receipts (digest, answer, expires) VALUES (?, ?, ?)",
                           (key, answer, micros(expires)))

    def receipt(self, key: bytes, now: datetime.datetime) -> Optional[bytes]:
        with self._tx(write=False) as cursor:
            cursor.execute("SELECT answer FROM receipts WHERE digest = ? AND expires >= ?", (key, micros(now)))
            row = cursor.fetchone()
        return None if row is None else bytes(row[0])

    # -- limits and housekeeping --------------------------------------------------------------

    def limit(self) -> Limit:
        with self._tx(write=False) as cursor:
            cursor.execute("SELECT enrolments, window_seconds FROM limits WHERE id = 1")
            row = cursor.fetchone()
        if row is None:
            raise StoreUnavailable("the database has no limits row: run migrate")
        return Limit(int(row[0]), datetime.timedelta(seconds=int(row[1])))

    def set_limit(self, limit: Limit) -> None:
        with self._tx() as cursor:
            cursor.execute("UPDATE limits SET enrolments = ?, window_seconds = ? WHERE id = 1",
                           (limit.enrolments, int(limit.window.total_seconds())))

    # -- tenants ------------------------------------------------------------------------------

    def _tenants(self, cursor: Cursor, where: str = "", params: Sequence[Any] = ()) -> List[Tenant]:
        cursor.execute(f"SELECT t.name, t.key_digest, t.created, t.issue_limit, t.issue_window, a.app_id "
                       f"FROM tenants t LEFT JOIN tenant_apps a ON a.tenant = t.name {where} ORDER BY t.name, a.app_id",
                       params)
        tenants: List[Tenant] = []
        for name, digest, created, issued, window, app_id in cursor.fetchall():
            if not tenants or tenants[-1].name != name:
                tenants.append(Tenant(name, (), bytes(digest), from_micros(created),
                                      IssueLimit(int(issued), datetime.timedelta(seconds=int(window)))))
            if app_id is not None:
                tenants[-1] = dataclasses.replace(tenants[-1], app_ids=tenants[-1].app_ids + (app_id,))
        return tenants

    def add_tenant(self, tenant: Tenant) -> Optional[str]:
        with self._tx() as cursor:
            self._serialize(cursor, _TENANTS_LOCK)  # check and insert as one (invariant 12)
            refusal = tenant_refusal(tenant, self._tenants(cursor))
            if refusal is not None:
                return refusal
            cursor.execute("INSERT INTO tenants (name, key_digest, created, issue_limit, issue_window) "
                           "VALUES (?, ?, ?, ?, ?)", (tenant.name, tenant.key_digest, micros(tenant.created),
                                                      tenant.limit.issued, int(tenant.limit.window.total_seconds())))
            for app_id in tenant.app_ids:
                cursor.execute("INSERT INTO tenant_apps (app_id, tenant) VALUES (?, ?)", (app_id, tenant.name))
        return None

    def tenant(self, key_digest: bytes) -> Optional[Tenant]:
        with self._tx(write=False) as cursor:
            found = self._tenants(cursor, "WHERE t.key_digest = ?", (key_digest,))
        return found[0] if found else None

    def tenants(self) -> List[Tenant]:
        with self._tx(write=False) as cursor:
            return self._tenants(cursor)

    def remove_tenant(self, name: str) -> bool:
        with self._tx() as cursor:
            cursor.execute("DELETE FROM tenant_apps WHERE tenant = ?", (name,))
            cursor.execute("DELETE FROM tenant_issues WHERE tenant = ?", (name,))
            cursor.execute("DELETE FROM tenants WHERE name = ? RETURNING name", (name,))
            return cursor.fetchone() is not None

    def set_tenant_limit(self, name: str, limit: IssueLimit) -> bool:
        with self._tx() as cursor:
            cursor.execute("UPDATE tenants SET issue_limit = ?, issue_window = ? WHERE name = ? RETURNING name",
                           (limit.issued, int(limit.window.total_seconds()), name))
            return cursor.fetchone() is not None

    #: One more issue counted in the tenant's row, unless its window (now's, or a later one that
    #: another host's clock began) holds `issued` already: one conditional upsert, so that the
    #: row's lock decides races (invariant 15). Every right-hand side reads the row as it was.
    _COUNT_ISSUE = ("INSERT INTO tenant_issues (tenant, window_start, issued) VALUES (?, ?, 1) "
                    "ON CONFLICT (tenant) DO UPDATE SET "
                    "issued = CASE WHEN tenant_issues.window_start < excluded.window_start THEN 1 "
                    "ELSE tenant_issues.issued + 1 END, "
                    "window_start = CASE WHEN tenant_issues.window_start < excluded.window_start "
                    "THEN excluded.window_start ELSE tenant_issues.window_start END "
                    "WHERE tenant_issues.window_start < excluded.window_start OR tenant_issues.issued < ? "
                    "RETURNING issued")

    def add_tenant_nonce(self, nonce: bytes, expires: datetime.datetime, purpose: str, app_id: Optional[str],
                         tenant: str, limit: IssueLimit, now: datetime.datetime) -> Optional[Limited]:
        start, end = limit.window_of(now)
        with self._tx() as cursor:
            cursor.execute(self._COUNT_ISSUE, (tenant, micros(start), limit.issued))
            if cursor.fetchone() is None:
                return Limited(end)
            cursor.execute("INSERT INTO nonces (nonce, expires, used, purpose, app_id) VALUES (?, ?, ?, ?, ?)",
                           (nonce, micros(expires), False, purpose, app_id))
        return None

    # -- device bits --------------------------------------------------------------------------

    _BITS_COLUMNS = "bits, month0, month1, month2, updated"

    @staticmethod
    def _bits_of(row: Tuple[Any, ...]) -> DeviceBits:
        bits = int(row[0])
        return DeviceBits((bool(bits & 1), bool(bits & 2), bool(bits & 4)), (row[1], row[2], row[3]), from_micros(row[4]))

    def device_bits(self, tenant: str, keys: Sequence[bytes]) -> Optional[DeviceBits]:
        if not keys:
            return None
        with self._tx(write=False) as cursor:
            cursor.execute(f"SELECT {self._BITS_COLUMNS} FROM device_bits WHERE tenant = ? AND device_key IN "
                           f"{self._in(keys)} ORDER BY updated DESC, device_key DESC", (tenant, *keys))
            row = cursor.fetchone()
        return None if row is None else self._bits_of(row)

    def write_bits(self, tenant: str, key: bytes, bits: Tuple[bool, bool, bool], now: datetime.datetime) -> DeviceBits:
        with self._tx() as cursor:
            # The row's lock, then read, compute and write under it (invariant 13).
            cursor.execute("INSERT INTO device_bits (tenant, device_key, bits, updated) VALUES (?, ?, 0, ?) "
                           "ON CONFLICT DO NOTHING", (tenant, key, micros(now)))
            cursor.execute(f"SELECT {self._BITS_COLUMNS} FROM device_bits WHERE tenant = ? AND device_key = ?"
                           + self.for_update, (tenant, key))
            row = cursor.fetchone()
            before = None if row is None or int(row[0]) == 0 else self._bits_of(row)  # 0: the row just made
            record = written_bits(before, bits, now)
            if any(bits):
                cursor.execute("UPDATE device_bits SET bits = ?, month0 = ?, month1 = ?, month2 = ?, updated = ? "
                               "WHERE tenant = ? AND device_key = ?",
                               (sum(1 << i for i, b in enumerate(bits) if b), *record.months, micros(now), tenant, key))
            else:
                cursor.execute("DELETE FROM device_bits WHERE tenant = ? AND device_key = ?", (tenant, key))
        return record

    def pseudonyms(self, ek_pseudonym: bytes) -> List[bytes]:
        with self._tx(write=False, autocommit=True) as cursor:
            return self._members(cursor, ek_pseudonym)

    #: The bits of a device (of the keys bound after the tenant), as one text value for a subquery:
    #: "bits,month0,month1,month2,updated" of the record updated last (months empty when NULL).
    _LATEST_BITS = ("(SELECT CAST(bits AS TEXT) || ',' || coalesce(month0, '') || ',' || coalesce(month1, '') || ',' || "
                    "coalesce(month2, '') || ',' || CAST(updated AS TEXT) FROM device_bits WHERE tenant = ? AND device_key IN {} "
                    "ORDER BY updated DESC, device_key DESC LIMIT 1)")

    def tenant_device(self, tenant: str, first: bytes, keys: Sequence[bytes], now: datetime.datetime,
                      count: bool) -> Tuple[Optional[DeviceBits], Optional[Activity]]:
        latest = self._LATEST_BITS.format(self._in(keys) if keys else "(NULL)")
        with self._tx(autocommit=True) as cursor:
            if count:
                # One statement: the count (counted(), invariant 14) and the bits read with it.
                cursor.execute(
                    "INSERT INTO device_activity (tenant, device_key, hour, count, previous) VALUES (?, ?, ?, 1, 0) "
                    "ON CONFLICT (tenant, device_key) DO UPDATE SET "
                    "count = CASE WHEN device_activity.hour >= excluded.hour THEN device_activity.count + 1 ELSE 1 END, "
                    "previous = CASE WHEN device_activity.hour >= excluded.hour THEN device_activity.previous "
                    "WHEN device_activity.hour = excluded.hour - 1 THEN device_activity.count ELSE 0 END, "
                    "hour = CASE WHEN device_activity.hour >= excluded.hour THEN device_activity.hour "
                    f"ELSE excluded.hour END RETURNING hour, count, previous, {latest}",
                    (tenant, first, hour_of(now), tenant, *keys))
            else:
                cursor.execute(f"SELECT a.hour, a.count, a.previous, {latest} FROM (SELECT 1) AS one "
                               "LEFT JOIN device_activity a ON a.tenant = ? AND a.device_key = ?",
                               (tenant, *keys, tenant, first))
            row = cursor.fetchone()
        assert row is not None  # an INSERT … RETURNING, or a SELECT of one row
        activity = None if row[0] is None else Activity(int(row[0]), int(row[1]), int(row[2]))
        if row[3] is None:
            return None, activity
        bits, month0, month1, month2, updated = str(row[3]).split(",")
        return self._bits_of((bits, month0 or None, month1 or None, month2 or None, int(updated))), activity

    def forget_bits(self, before: datetime.datetime) -> int:
        with self._tx() as cursor:
            cursor.execute("DELETE FROM device_bits WHERE updated < ? RETURNING tenant", (micros(before),))
            return len(cursor.fetchall())

    def purge(self, now: datetime.datetime) -> None:
        with self._tx() as cursor:
            cursor.execute("DELETE FROM nonces WHERE expires < ?", (micros(now),))
            cursor.execute("DELETE FROM challenges WHERE expires < ?", (micros(now),))
            cursor.execute("DELETE FROM receipts WHERE expires < ?", (micros(now),))
            cursor.execute("DELETE FROM device_activity WHERE hour < ?", (hour_of(now) - 1,))


def _linked_text(linked: Sequence[Tuple[str, bytes, bytes]]) -> Optional[str]:
    """A pending challenge's linked EKs as the text its column keeps: JSON [[kind, pseudonym hex,
    secret hex], …]; NULL for none."""
    return json.dumps([[kind, pseudonym.hex(), secret.hex()] for kind, pseudonym, secret in linked]) if linked else None


def _linked_of(text: Optional[str]) -> Tuple[Tuple[str, bytes, bytes], ...]:
    return tuple((kind, bytes.fromhex(p), bytes.fromhex(secret)) for kind, p, secret in json.loads(text or "[]"))
