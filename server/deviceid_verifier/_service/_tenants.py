"""Which tenant an app server's request comes from (docs/SERVER-STATE.md, "Tenant" and invariant
10): none while the store has no tenant (the open trial); otherwise the tenant whose API key the
request's `Authorization: Bearer KEY` carries, or a refusal where one is required. The store's tenants are read at most
every CACHE_SECONDS by each process, so a key costs no database round trip per request."""

from __future__ import annotations

import hashlib
import threading
import time
from typing import Any, Dict, Mapping, Optional

from .._store import Store, Tenant

#: How long a process trusts its copy of the tenants: a tenant added or removed takes effect within it.
CACHE_SECONDS = 5.0
#: The challenge of a 401 (RFC 6750 §3).
CHALLENGE = 'Bearer realm="deviceid-verifier"'


def key_digest(key: str) -> bytes:
    """What the store keeps of an API key: SHA-256 of its UTF-8 text."""
    return hashlib.sha256(key.encode("utf-8")).digest()


class Unauthenticated(Exception):
    """The service has tenants and the request carries no key of one: 401 with CHALLENGE."""


class Gate:
    """The tenants of `store`, as one process of the service checks requests against them."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._by_digest: Dict[bytes, Tenant] = {}
        self._read_at: Optional[float] = None

    def _current(self) -> Dict[bytes, Tenant]:
        with self._lock:
            now = time.monotonic()
            if self._read_at is None or now - self._read_at >= CACHE_SECONDS:
                self._by_digest = {t.key_digest: t for t in self._store.tenants()}
                self._read_at = now
            return self._by_digest

    def caller(self, environ: Mapping[str, Any]) -> Optional[Tenant]:
        """The tenant of a request that may come from a device or an app server (a verification):
        None when it carries no Authorization or the service has no tenants; the key's tenant;
        Unauthenticated for a key that is no tenant's (a mistyped key is told, not ignored)."""
        if not environ.get("HTTP_AUTHORIZATION"):
            return None
        return self.tenant(environ)

    def tenant(self, environ: Mapping[str, Any]) -> Optional[Tenant]:
        """The request's tenant; None when the service has none; Unauthenticated when it has some
        and the request's key is missing or no tenant's."""
        tenants = self._current()
        if not tenants:
            return None
        scheme, _, key = str(environ.get("HTTP_AUTHORIZATION", "")).strip().partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise Unauthenticated("this service has tenants: an app server's request carries its tenant's API key "
                                  "(Authorization: Bearer KEY)")
        found = tenants.get(key_digest(key.strip()))  # a digest's lookup time tells nothing of a key
        if found is None:
            raise Unauthenticated("the API key is no tenant's (removed, or mistyped)")
        return found
