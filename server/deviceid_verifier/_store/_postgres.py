"""PostgresStore: the Store in a PostgreSQL database (psycopg 3, Debian's python3-psycopg), for
workers on several hosts. Transactions are READ COMMITTED; the statements are written so that
row locks decide every race (docs/SERVER-STATE.md, "Invariants")."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, List, Optional, Sequence, Tuple, Type

from ._sql import Cursor, SQLStore, StoreUnavailable


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


class PostgresStore(SQLStore):
    """The Store in the PostgreSQL database of `url` (a libpq connection URI or string)."""

    blob_type = "BYTEA"
    for_update = " FOR UPDATE"
    text_aggregate = "string_agg({}, ',')"

    def __init__(self, url: str, *, connect_timeout: int = 10) -> None:
        super().__init__()
        try:
            import psycopg  # noqa: F401
        except ImportError:  # a URL this install cannot open: the commands' usage error, with the install
            raise ValueError("PostgreSQL needs psycopg 3 (Debian: apt install python3-psycopg; "
                             "PyPI: pip install 'deviceid-verifier[postgresql]')") from None
        self.url = url
        self._connect_timeout = connect_timeout

    def _connect(self) -> Any:
        import psycopg
        return psycopg.connect(self.url, autocommit=True, connect_timeout=self._connect_timeout)

    @contextlib.contextmanager
    def _transaction(self, connection: Any, *, write: bool) -> Iterator[Cursor]:
        with connection.transaction():
            with connection.cursor() as cursor:
                yield _PostgresCursor(cursor)

    @contextlib.contextmanager
    def _statements(self, connection: Any) -> Iterator[Cursor]:
        # The connection is in autocommit mode: without BEGIN, each statement is its own transaction.
        with connection.cursor() as cursor:
            yield _PostgresCursor(cursor)

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
