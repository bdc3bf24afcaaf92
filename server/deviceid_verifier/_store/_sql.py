"""SQLStore: the Store on an SQL database, shared by SQLite and PostgreSQL. Each operation is one
transaction of statements written so that the database, not this process, decides races
(docs/SERVER-STATE.md, "Invariants"). A Dialect supplies what differs."""

from __future__ import annotations

import abc
import contextlib
import datetime
import os
import threading
from typing import Any, Iterator, List, Optional, Sequence, Tuple, Type

from ._base import CertificateRecord, CredentialRecord, Limit, Limited, NonceState, PendingChallenge, Store
from ._migrations import MIGRATIONS

_EPOCH = datetime.datetime(1970, 1, 1)


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

    #: How the dialect spells a binary column, and the clause that locks a selected row.
    blob_type = "BLOB"
    for_update = ""
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
    def _lock_migrations(self, cursor: Cursor) -> None:
        """Serialize migrate() across processes, until the transaction ends."""

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
    def _tx(self, *, write: bool = True, autocommit: bool = False) -> Iterator[Cursor]:
        """One operation's statements, as one transaction. With `autocommit`, the dialect may run
        each statement as a transaction of its own (PostgreSQL: one round trip instead of three,
        BEGIN, the statement, COMMIT): only for an operation that, on every path, changes nothing
        before the last statement it runs, so that no one can see it half done
        (docs/SERVER-STATE.md, "Operations")."""
        try:
            if self.connection_per_operation:
                connection = self._connect()
                try:
                    with self._transaction(connection, write=write) as cursor:
                        yield cursor
                finally:
                    connection.close()
            else:
                connection = self._connection()
                with (self._statements(connection) if autocommit
                      else self._transaction(connection, write=write)) as cursor:
                    yield cursor
        except self._unavailable() as e:
            self._drop()
            raise StoreUnavailable(f"the database did not answer: {e}") from None

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
                self._lock_migrations(cursor)
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

    def add_nonce(self, nonce: bytes, expires: datetime.datetime) -> None:
        with self._tx(autocommit=True) as cursor:
            cursor.execute("INSERT INTO nonces (nonce, expires, used) VALUES (?, ?, ?)",
                           (nonce, micros(expires), False))

    def use_nonce(self, nonce: bytes, now: datetime.datetime) -> NonceState:
        with self._tx(autocommit=True) as cursor:
            # One conditional update: of racing calls, exactly one changes the row (invariant 1).
            cursor.execute("UPDATE nonces SET used = ? WHERE nonce = ? AND used = ? RETURNING expires",
                           (True, nonce, False))
            row = cursor.fetchone()
            if row is not None:
                return NonceState.EXPIRED if from_micros(row[0]) < now else NonceState.FRESH
            cursor.execute("SELECT 1 FROM nonces WHERE nonce = ?", (nonce,))
            return NonceState.UNKNOWN if cursor.fetchone() is None else NonceState.USED

    # -- challenges ---------------------------------------------------------------------------

    def add_challenge(self, challenge_id: str, pending: PendingChallenge) -> None:
        with self._tx(autocommit=True) as cursor:
            cursor.execute("INSERT INTO challenges (id, secret, ak_public, app_id, ek_pseudonym, expires, tpm_device) "
                           "VALUES (?, ?, ?, ?, ?, ?, ?)",
                           (challenge_id, pending.secret, pending.ak_public, pending.app_id, pending.ek_pseudonym,
                            micros(pending.expires), pending.tpm_device))

    def take_challenge(self, challenge_id: str, now: datetime.datetime) -> Optional[PendingChallenge]:
        with self._tx(autocommit=True) as cursor:
            cursor.execute("DELETE FROM challenges WHERE id = ? "
                           "RETURNING secret, ak_public, app_id, ek_pseudonym, expires, tpm_device", (challenge_id,))
            row = cursor.fetchone()
        if row is None:
            return None
        pending = PendingChallenge(bytes(row[0]), bytes(row[1]), row[2], bytes(row[3]), from_micros(row[4]),
                                   row[5] or "")
        return pending if pending.expires >= now else None

    # -- certificates -------------------------------------------------------------------------

    _CERTIFICATE_COLUMNS = "serial, ek_pseudonym, app_id, ak_name, issued, not_after, revoked, revocation_reason"

    @staticmethod
    def _record(row: Tuple[Any, ...]) -> CertificateRecord:
        return CertificateRecord(int(row[0], 16), bytes(row[1]), row[2], bytes(row[3]), from_micros(row[4]),
                                 from_micros(row[5]), None if row[6] is None else from_micros(row[6]), row[7])

    @staticmethod
    def _limited(cursor: Cursor, ek_pseudonym: bytes, app_id: str, limit: Limit,
                 now: datetime.datetime) -> Optional[Limited]:
        end = micros(now)
        window = micros(_EPOCH + limit.window)
        # no upper bound: a record stamped later by a host whose clock runs ahead still counts
        cursor.execute("SELECT issued FROM certificates WHERE ek_pseudonym = ? AND app_id = ? AND issued > ? "
                       "ORDER BY issued DESC", (ek_pseudonym, app_id, end - window))
        recent = [row[0] for row in cursor.fetchall()]
        return Limited(from_micros(recent[limit.enrolments - 1] + window)) if len(recent) >= limit.enrolments else None

    def limited(self, ek_pseudonym: bytes, app_id: str, limit: Limit, now: datetime.datetime) -> Optional[Limited]:
        with self._tx(write=False) as cursor:
            return self._limited(cursor, ek_pseudonym, app_id, limit, now)

    def add_certificate(self, record: CertificateRecord, limit: Limit) -> Optional[Limited]:
        pair = (record.ek_pseudonym, record.app_id)
        with self._tx() as cursor:
            # The pair's lock row, then count and insert under it (invariant 3).
            cursor.execute("INSERT INTO enrolment_pairs (ek_pseudonym, app_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
                           pair)
            cursor.execute("SELECT 1 FROM enrolment_pairs WHERE ek_pseudonym = ? AND app_id = ?" + self.for_update,
                           pair)
            cursor.fetchone()
            limited = self._limited(cursor, record.ek_pseudonym, record.app_id, limit, record.issued)
            if limited is not None:
                return limited
            cursor.execute(f"INSERT INTO certificates ({self._CERTIFICATE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                           (format(record.serial, "x"), record.ek_pseudonym, record.app_id, record.ak_name, micros(record.issued),
                            micros(record.not_after), None if record.revoked is None else micros(record.revoked),
                            record.revocation_reason))
        return None

    def enrolments(self, ek_pseudonym: bytes, app_id: str, since: datetime.datetime) -> int:
        with self._tx(write=False, autocommit=True) as cursor:
            cursor.execute("SELECT count(*) FROM certificates WHERE ek_pseudonym = ? AND app_id = ? AND issued > ?",
                           (ek_pseudonym, app_id, micros(since)))
            row = cursor.fetchone()
        return int(row[0]) if row is not None else 0

    def certificate(self, serial: int) -> Optional[CertificateRecord]:
        with self._tx(write=False, autocommit=True) as cursor:
            cursor.execute(f"SELECT {self._CERTIFICATE_COLUMNS} FROM certificates WHERE serial = ?",
                           (format(serial, "x"),))
            row = cursor.fetchone()
        return None if row is None else self._record(row)

    def revoke(self, serial: int, reason: str, now: datetime.datetime) -> bool:
        with self._tx() as cursor:
            cursor.execute("UPDATE certificates SET revoked = ?, revocation_reason = ? "
                           "WHERE serial = ? AND revoked IS NULL RETURNING serial",
                           (micros(now), reason, format(serial, "x")))
            return cursor.fetchone() is not None

    def revoked(self, now: datetime.datetime) -> List[CertificateRecord]:
        with self._tx(write=False) as cursor:
            cursor.execute(f"SELECT {self._CERTIFICATE_COLUMNS} FROM certificates "
                           "WHERE revoked IS NOT NULL AND not_after >= ?", (micros(now),))
            rows = cursor.fetchall()
        return sorted((self._record(row) for row in rows), key=lambda r: r.serial)

    # -- App Attest credentials ---------------------------------------------------------------

    _CREDENTIAL_COLUMNS = "credential_id, app_id, cose_key, ak_name, ak_serial, counter, registered, counter_failed"

    @staticmethod
    def _credential(row: Tuple[Any, ...]) -> CredentialRecord:
        return CredentialRecord(bytes(row[0]), row[1], bytes(row[2]), bytes(row[3]), int(row[4], 16), int(row[5]),
                                from_micros(row[6]), None if row[7] is None else from_micros(row[7]))

    def add_credential(self, record: CredentialRecord) -> Optional[CredentialRecord]:
        with self._tx() as cursor:
            # One statement: of racing registrations of one id, the database orders the writes.
            cursor.execute(f"INSERT INTO credentials ({self._CREDENTIAL_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                           "ON CONFLICT (credential_id) DO UPDATE SET ak_name = excluded.ak_name, "
                           "ak_serial = excluded.ak_serial, counter = CASE WHEN excluded.counter > credentials.counter "
                           "THEN excluded.counter ELSE credentials.counter END "
                           "WHERE credentials.app_id = excluded.app_id "
                           f"RETURNING {self._CREDENTIAL_COLUMNS}",
                           (record.credential_id, record.app_id, record.cose_key, record.ak_name,
                            format(record.ak_serial, "x"), record.counter, micros(record.registered),
                            None if record.counter_failed is None else micros(record.counter_failed)))
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

    def purge(self, now: datetime.datetime) -> None:
        with self._tx() as cursor:
            cursor.execute("DELETE FROM nonces WHERE expires < ?", (micros(now),))
            cursor.execute("DELETE FROM challenges WHERE expires < ?", (micros(now),))
