"""PostgresStore: the Store in a PostgreSQL database (psycopg 3, Debian's python3-psycopg), for
workers on several hosts. Transactions are READ COMMITTED; the statements are written so that
row locks decide every race (docs/SERVER-STATE.md, "Invariants").

Every operation has a deadline (issue 51, case 4; docs/SERVER.md, "Faults"): the server cancels a
statement that runs (or waits for a lock) past STATEMENT_TIMEOUT, the client gives up on a
connection attempt after CONNECT_TIMEOUT and on a whole operation after OPERATION_TIMEOUT (the
Watchdog, for a database that does not answer at all), and TCP keepalives find a peer that
vanished while its connection sat idle. Each is a StoreUnavailable: 503 with Retry-After. Once an
operation has met a silent database, the process's other operations fail at once for
SILENT_RETRY seconds, and then one tries it again while the rest go on failing at once: requests
queued behind the first are not each made to wait out a deadline of their own."""

from __future__ import annotations

import contextlib
import datetime
import threading
import time
from typing import Any, FrozenSet, Iterator, List, Optional, Sequence, Tuple, Type

from ._base import COUNTER_ACCEPTED, COUNTER_REFUSED, WEBAUTHN, Ban, CheckedAssertion, IssueLimit, Limited, NonceState
from ._deadline import Watchdog
from ._sql import Cursor, SQLStore, StoreUnavailable, from_micros, micros


class _PostgresCursor(Cursor):
    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._cursor.execute(sql.replace("?", "%s"), tuple(params))

    def fetchone(self) -> Optional[Tuple[Any, ...]]:
        row = self._cursor.fetchone()
        return None if row is None else tuple(row)

    def fetchall(self) -> List[Tuple[Any, ...]]:
        return [tuple(row) for row in self._cursor.fetchall()]


#: Seconds a connection attempt may wait for each answer of the server (psycopg's connect_timeout;
#: libpq takes 2 as its least).
CONNECT_TIMEOUT = 2
#: Milliseconds a statement may run, lock waits included, before the server cancels it.
STATEMENT_TIMEOUT_MS = 2500
#: Seconds an operation (a transaction, or a new connection's settings) may take before the client
#: cuts its connection.
OPERATION_TIMEOUT = 3.0
#: Seconds after an operation met a silent database during which the others fail at once.
SILENT_RETRY = 1.0
#: An operation that failed after this long met a database that did not answer (one that
#: refuses, or answers an error, fails at once).
_SILENCE = min(CONNECT_TIMEOUT, OPERATION_TIMEOUT)
#: Milliseconds a session may sit inside a transaction with no statement before the server ends
#: it: a worker frozen mid-transaction does not hold its row locks for ever.
IDLE_IN_TRANSACTION_TIMEOUT_MS = 10_000
#: libpq's TCP options, unless the URL sets them: an idle connection whose host vanished is found
#: within about 25 s, and unacknowledged data fails the connection after 9 s.
TCP_OPTIONS = {"keepalives": "1", "keepalives_idle": "10", "keepalives_interval": "5", "keepalives_count": "3",
               "tcp_user_timeout": "9000"}


class PostgresStore(SQLStore):
    """The Store in the PostgreSQL database of `url` (a libpq connection URI or string)."""

    blob_type = "BYTEA"
    for_update = " FOR UPDATE"
    text_aggregate = "string_agg({}, ',')"

    def __init__(self, url: str, *, connect_timeout: int = CONNECT_TIMEOUT) -> None:
        super().__init__()
        try:
            import psycopg  # noqa: F401
        except ImportError:  # a URL this install cannot open: the commands' usage error, with the install
            raise ValueError("PostgreSQL needs psycopg 3 (Debian: apt install python3-psycopg; "
                             "PyPI: pip install 'deviceid-verifier[postgresql]')") from None
        self.url = url
        self._connect_timeout = connect_timeout
        self._watchdog = Watchdog()
        self._silent_until = 0.0  # time.monotonic(); 0: the database answered last
        self._silence = threading.Lock()

    def _connect(self) -> Any:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict, make_conninfo
        given = conninfo_to_dict(self.url)
        options = {name: value for name, value in [*TCP_OPTIONS.items(), ("connect_timeout", str(self._connect_timeout))]
                   if name not in given}  # what the URL sets, the operator chose
        connection = psycopg.connect(make_conninfo(self.url, **options), autocommit=True)
        try:
            # SET rather than libpq's options=-c…: a pooler in front (PgBouncer) may refuse options
            with self._deadline(connection):
                connection.execute(f"SET statement_timeout = {STATEMENT_TIMEOUT_MS}; "
                                   f"SET idle_in_transaction_session_timeout = {IDLE_IN_TRANSACTION_TIMEOUT_MS}")
        except BaseException:
            connection.close()
            raise
        return connection

    def _deadline(self, connection: Any) -> contextlib.AbstractContextManager[None]:
        if getattr(self._local, "migrating", False):
            return contextlib.nullcontext()
        return self._watchdog.guard(connection.fileno(), OPERATION_TIMEOUT)

    def migrate(self, until: Optional[str] = None) -> List[str]:
        # A migration may take long on a large table (an index built) or wait for another
        # instance's: the deadlines are the requests', not the operator's.
        self._local.migrating = True
        try:
            return super().migrate(until)
        finally:
            self._local.migrating = False

    @contextlib.contextmanager
    def _tx(self, *, write: bool = True, autocommit: bool = False) -> Iterator[Cursor]:
        if self._silent_until:
            with self._silence:
                now = time.monotonic()
                if now < self._silent_until:
                    raise StoreUnavailable("the database did not answer moments ago")
                # this operation tries it again; the others fail at once until it is done
                self._silent_until = now + CONNECT_TIMEOUT + OPERATION_TIMEOUT
        started = time.monotonic()
        try:
            with super()._tx(write=write, autocommit=autocommit) as cursor:
                yield cursor
        except StoreUnavailable as e:
            # silence: no answer for that long, and no error of the server's (one with an SQLSTATE,
            # such as a statement_timeout's cancel) behind it
            silent = time.monotonic() - started >= _SILENCE and getattr(e.__context__, "sqlstate", None) is None
            self._silent_until = time.monotonic() + SILENT_RETRY if silent else 0.0
            raise
        except BaseException:
            self._silent_until = 0.0  # it answered, if with an error
            raise
        self._silent_until = 0.0

    @contextlib.contextmanager
    def _transaction(self, connection: Any, *, write: bool) -> Iterator[Cursor]:
        with self._deadline(connection):
            with connection.transaction():
                with connection.cursor() as cursor:
                    if getattr(self._local, "migrating", False):
                        cursor.execute("SET LOCAL statement_timeout = 0")
                    yield _PostgresCursor(cursor)

    @contextlib.contextmanager
    def _statements(self, connection: Any) -> Iterator[Cursor]:
        # The connection is in autocommit mode: without BEGIN, each statement is its own
        # transaction; under the same deadline as a transaction (docs/SERVER.md, "Faults").
        with self._deadline(connection):
            with connection.cursor() as cursor:
                yield _PostgresCursor(cursor)

    #: spend_assertion's writes as parts of one statement's WITH. Each data-modifying part reads only
    #: what the one before it returned (all run on one snapshot): `spent` is use_nonce's conditional
    #: update (in checked_spend_assertion, only if the credential passed: else nothing is written);
    #: `raised`, advance_counter's, only for a FRESH challenge (of racing assertions with one
    #: counter, the row lock and READ COMMITTED's recheck of `counter < k` on the newest row let
    #: one through, invariant 8); `marked`, the mark, only when `raised` changed nothing; `kept`, the
    #: receipt. The answers that follow: whether `spent` found the challenge and it was unexpired,
    #: whether the counter rose, whether the challenge exists (USED when not spent now), and the
    #: receipt a USED challenge's retry finds.
    _SPENDING = (
        "spent AS (UPDATE nonces SET used = TRUE WHERE {spendable} AND used = FALSE{guard} "
        "RETURNING expires >= ? AS fresh), "
        "raised AS (UPDATE credentials SET counter = ? WHERE credential_id = ? AND counter < ? "
        "AND (SELECT fresh FROM spent) RETURNING counter), "
        "marked AS (UPDATE credentials SET counter_failed = ? WHERE credential_id = ? AND counter_failed IS NULL "
        "AND (SELECT fresh FROM spent) AND NOT EXISTS (SELECT 1 FROM raised) RETURNING counter), "
        "kept AS (INSERT INTO receipts (digest, answer, expires) SELECT ?::bytea, "
        "CASE WHEN EXISTS (SELECT 1 FROM raised) THEN ?::bytea ELSE ?::bytea END, ? "
        "WHERE ?::bytea IS NOT NULL AND (SELECT fresh FROM spent) RETURNING digest)")
    _SPENT = ("(SELECT fresh FROM spent), EXISTS (SELECT 1 FROM raised), EXISTS (SELECT 1 FROM nonces WHERE {spendable}), "
              "(SELECT answer FROM receipts WHERE digest = ?::bytea AND expires >= ?)")
    #: spend_assertion as one statement: one round trip, one commit.
    _SPEND_ASSERTION = ("WITH " + _SPENDING.format(spendable=SQLStore._SPENDABLE, guard="") + " SELECT "
                        + _SPENT.format(spendable=SQLStore._SPENDABLE))

    _CREDENTIAL = [name.strip() for name in SQLStore._CREDENTIAL_COLUMNS.split(",")]
    _CERTIFICATE = [name.strip() for name in SQLStore._CERTIFICATE_COLUMNS.split(",")]
    #: checked_spend_assertion as one statement, the reads first: `found`, the credential and its
    #: certificate's record (credential_and_certificate's join); `ban`, the first ban of that
    #: record's device for its app id (banned's query; serials are hex without leading zeros, so
    #: by length, then text, is by number); `passes`, the check; then _SPENDING, guarded by it.
    #: One row: what was read (NULLs for what is not there), what the spending answered, whether
    #: the credential passed.
    _CHECKED_SPEND_ASSERTION = (
        "WITH found AS (SELECT " + ", ".join([f"c.{n} AS c_{n}" for n in _CREDENTIAL] + [f"k.{n} AS k_{n}" for n in _CERTIFICATE])
        + " FROM credentials c LEFT JOIN certificates k ON k.serial = c.ak_serial WHERE c.credential_id = ?), "
        "ban AS (SELECT b.since, b.reason, b.serial FROM bans b, found f WHERE f.k_serial IS NOT NULL "
        "AND b.app_id = f.k_app_id AND (b.ek_pseudonym = f.k_ek_pseudonym OR b.ek_pseudonym IN "
        "(SELECT ek_pseudonym FROM device_links WHERE device = coalesce((SELECT device FROM device_links "
        "WHERE ek_pseudonym = f.k_ek_pseudonym), f.k_ek_pseudonym))) "
        "ORDER BY b.since, length(b.serial), b.serial LIMIT 1), "
        "passes AS (SELECT 1 FROM found f WHERE f.c_app_id = ? AND f.c_cose_key = ?::bytea "
        "AND f.c_ak_anchor = ANY(?::bytea[]) "
        "AND f.c_ak_not_after >= ? AND f.k_revoked IS NULL AND NOT EXISTS (SELECT 1 FROM ban)), "
        + _SPENDING.format(spendable=SQLStore._SPENDABLE, guard=" AND EXISTS (SELECT 1 FROM passes)")
        + " SELECT " + ", ".join([f"found.c_{n}" for n in _CREDENTIAL] + [f"found.k_{n}" for n in _CERTIFICATE])
        + ", ban.since, ban.reason, ban.serial, " + _SPENT.format(spendable=SQLStore._SPENDABLE)
        + ", EXISTS (SELECT 1 FROM passes) FROM (SELECT 1) AS one LEFT JOIN found ON TRUE LEFT JOIN ban ON TRUE")

    def checked_spend_assertion(self, credential_id: bytes, app_id: str, cose_key: bytes, anchors: FrozenSet[bytes],
                                nonce: bytes, now: datetime.datetime, counter: int, key: Optional[bytes],
                                keep_until: datetime.datetime) -> CheckedAssertion:
        with self._tx(autocommit=True) as cursor:  # one statement: one round trip, one commit
            cursor.execute(self._CHECKED_SPEND_ASSERTION, (
                credential_id, app_id, cose_key, sorted(anchors), micros(now),
                *self._spending(nonce, now, app_id, credential_id, counter, key, keep_until)))
            row = cursor.fetchone()
        assert row is not None  # one row, whatever was found
        credential_width, certificate_width = len(self._CREDENTIAL), len(self._CERTIFICATE)
        certificate_end = credential_width + certificate_width
        if row[0] is None:
            return CheckedAssertion(None, None, None, None)
        credential = self._credential(row[:credential_width])
        certificate = None if row[credential_width] is None else self._record(row[credential_width:certificate_end])
        since, reason, serial = row[certificate_end:certificate_end + 3]
        ban = None if since is None else Ban(from_micros(since), reason, int(serial, 16))
        passed = row[-1]
        return CheckedAssertion(credential, certificate, ban, self._spent(row[certificate_end + 3:-1]) if passed else None)

    def spend_assertion(self, nonce: bytes, now: datetime.datetime, app_id: str, credential_id: bytes, counter: int,
                        key: Optional[bytes], keep_until: datetime.datetime) -> Tuple[NonceState, Optional[bytes]]:
        with self._tx(autocommit=True) as cursor:  # one statement: one round trip, one commit
            cursor.execute(self._SPEND_ASSERTION, self._spending(nonce, now, app_id, credential_id, counter, key,
                                                                 keep_until))
            row = cursor.fetchone()
        assert row is not None  # a SELECT without FROM answers one row
        return self._spent(row)

    @staticmethod
    def _spending(nonce: bytes, now: datetime.datetime, app_id: str, credential_id: bytes, counter: int,
                  key: Optional[bytes], keep_until: datetime.datetime) -> Tuple[Any, ...]:
        """The parameters of _SPENDING and _SPENT, in order."""
        at, spendable = micros(now), (nonce, WEBAUTHN, app_id)
        return (*spendable, at, counter, credential_id, counter, at, credential_id,
                key, COUNTER_ACCEPTED, COUNTER_REFUSED, micros(keep_until), key, *spendable, key, at)

    @staticmethod
    def _spent(row: Sequence[Any]) -> Tuple[NonceState, Optional[bytes]]:
        fresh, raised, held, kept = row
        if fresh is not None:
            return (NonceState.FRESH, COUNTER_ACCEPTED if raised else COUNTER_REFUSED) if fresh else \
                (NonceState.EXPIRED, None)
        if not held:
            return NonceState.UNKNOWN, None
        return NonceState.USED, None if kept is None else bytes(kept)

    def add_tenant_nonce(self, nonce: bytes, expires: datetime.datetime, purpose: str, app_id: Optional[str],
                         tenant: str, limit: IssueLimit, now: datetime.datetime) -> Optional[Limited]:
        start, end = limit.window_of(now)
        with self._tx(autocommit=True) as cursor:  # the count and the nonce in one statement: one round trip
            cursor.execute(f"WITH counted AS ({self._COUNT_ISSUE}) INSERT INTO nonces (nonce, expires, used, purpose, "
                           "app_id) SELECT ?, ?, FALSE, ?, ? WHERE EXISTS (SELECT 1 FROM counted) RETURNING 1",
                           (tenant, micros(start), limit.issued, nonce, micros(expires), purpose, app_id))
            added = cursor.fetchone() is not None
        return None if added else Limited(end)

    def _serialize(self, cursor: Cursor, name: bytes, *, shared: bool = False) -> None:
        # pg_advisory_xact_lock's key: the name's 8 bytes as a bigint, top bit cleared
        function = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
        cursor.execute(f"SELECT {function}(?)", (int.from_bytes(name, "big") & 0x7FFF_FFFF_FFFF_FFFF,))
        cursor.fetchone()

    def _unavailable(self) -> Tuple[Type[BaseException], ...]:
        import psycopg
        # A read-only transaction (a standby after a failover, default_transaction_read_only) is
        # the database's state, not the client's: 503, as a database that does not answer.
        return (psycopg.OperationalError, psycopg.InterfaceError, psycopg.errors.ReadOnlySqlTransaction)

    def check_writable(self) -> None:
        with self._tx(write=False) as cursor:
            cursor.execute("SELECT current_setting('transaction_read_only')")
            row = cursor.fetchone()
        if row is None or row[0] != "off":
            raise StoreUnavailable("the database is read-only (a standby, or default_transaction_read_only)")
