"""The state a Privacy CA and a verifier keep between messages, behind one interface
(docs/SERVER-STATE.md): MemoryStore for one process, SQLiteStore for one host, PostgresStore for
a fleet. open_store(url) picks one by the URL's scheme."""

from __future__ import annotations

from ._base import (Activity, Ban, CertificateRecord, CredentialRecord, DeviceBits, IssueLimit, Limit, Limited, NonceState,
                    PendingChallenge, PublishedCRL, Store, Tenant)
from ._memory import MemoryStore
from ._open import open_store

__all__ = ["Activity", "Ban", "Tenant", "IssueLimit", "DeviceBits", "Store", "MemoryStore", "open_store", "NonceState", "PendingChallenge",
           "CertificateRecord", "CredentialRecord", "Limit", "Limited", "PublishedCRL"]
