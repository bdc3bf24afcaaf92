"""open_store(url): the Store a database URL names, migrated to the current schema."""

from __future__ import annotations

import urllib.parse

from ._base import Store
from ._memory import MemoryStore
from ._postgres import PostgresStore
from ._sql import SQLStore
from ._sqlite import SQLiteStore

SCHEMES = ("sqlite:///PATH", "postgresql://…", "postgres://…", "memory:")


def open_store(url: str, *, migrate: bool = True) -> Store:
    """The store of `url`: sqlite:///absolute/path or sqlite:relative/path (one file, one host),
    postgresql://user@host:port/database or postgres://… (libpq's URI), or memory: (this process).
    With `migrate`, the missing migrations are applied first. ValueError for another scheme."""
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    store: SQLStore
    if scheme == "sqlite":
        path = urllib.parse.unquote(url[len("sqlite:"):])
        if path.startswith("///"):
            path = path[2:]
        elif path.startswith("//"):
            raise ValueError("an SQLite URL is sqlite:///absolute/path or sqlite:relative/path (no host)")
        if not path:
            raise ValueError("the SQLite URL names no file")
        store = SQLiteStore(path)
    elif scheme in ("postgresql", "postgres"):
        store = PostgresStore(url)
    elif scheme == "memory":
        return MemoryStore()
    else:
        raise ValueError(f"{url!r} is not a database URL ({', '.join(SCHEMES)})")
    if migrate:
        store.migrate()
    return store
