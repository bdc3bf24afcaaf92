"""SQLiteStore: the Store in one SQLite file, for the workers of one host. WAL journal, so
readers never wait for the writer; every write transaction is BEGIN IMMEDIATE, so writers
take the database's one write lock before they read what they will decide on."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from typing import Any, Iterator, List, Optional, Sequence, Tuple, Type

from ._sql import Cursor, SQLStore

#: How long a call waits for another process's write lock before it is StoreUnavailable.
BUSY_TIMEOUT_SECONDS = 10.0


class _SQLiteCursor(Cursor):
    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self._cursor = cursor

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._cursor.execute(sql, tuple(params))

    def fetchone(self) -> Optional[Tuple[Any, ...]]:
        row = self._cursor.fetchone()
        return None if row is None else tuple(row)

    def fetchall(self) -> List[Tuple[Any, ...]]:
        return [tuple(row) for row in self._cursor.fetchall()]


class SQLiteStore(SQLStore):
    """The Store in the SQLite database file `path` (created with mode 0600 if missing: pending
    challenges hold secrets). Each operation has a connection of its own, closed at its end: an
    SQLite connection open across fork() is unsafe in the child (SQLite's documented rule: it keeps
    one lock table per process and file, and POSIX locks are not inherited). With one connection
    per thread, Tests/server/test_store.py's race of 24 forked processes for one challenge saw it
    taken twice in 3 of 13 runs; with one per operation, in none of 14."""

    connection_per_operation = True

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def _connect(self) -> Any:
        if not os.path.exists(self.path):
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
        connection = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None,
                                     check_same_thread=False)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=FULL")
        return connection

    @contextlib.contextmanager
    def _transaction(self, connection: Any, *, write: bool) -> Iterator[Cursor]:
        cursor = connection.cursor()
        cursor.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            yield _SQLiteCursor(cursor)
        except BaseException:
            connection.rollback()
            raise
        connection.commit()

    def _serialize(self, cursor: Cursor, name: bytes, *, shared: bool = False) -> None:
        pass  # BEGIN IMMEDIATE already holds the write lock: every writer is serialized

    def _unavailable(self) -> Tuple[Type[BaseException], ...]:
        return (sqlite3.OperationalError, OSError)  # OSError: the file cannot be created
