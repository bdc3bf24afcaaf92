"""The schema, as named migrations applied in order (docs/SERVER-STATE.md, invariant 7). A
migration, once released, is never edited: a change is a new migration. Each is SQL common to
SQLite and PostgreSQL, with BLOB spelled as the dialect spells it. Times are BIGINT
microseconds since 1970-01-01 UTC; serial numbers lowercase hex."""

from __future__ import annotations

from typing import List, Tuple

#: (name, statements), oldest first.
MIGRATIONS: List[Tuple[str, Tuple[str, ...]]] = [
    # What 0.3's state files held: issued nonces and pending enrolment challenges.
    ("0001_nonces_and_challenges", (
        "CREATE TABLE nonces (nonce BLOB PRIMARY KEY, expires BIGINT NOT NULL, used BOOLEAN NOT NULL)",
        "CREATE INDEX nonces_expires ON nonces (expires)",
        "CREATE TABLE challenges (id TEXT PRIMARY KEY, secret BLOB NOT NULL, ak_public BLOB NOT NULL, "
        "app_id TEXT NOT NULL, ek_pseudonym BLOB NOT NULL, expires BIGINT NOT NULL)",
        "CREATE INDEX challenges_expires ON challenges (expires)",
    )),
    # A fleet's CA: the certificates it issued (its enrolments), their revocation, the limit.
    ("0002_certificates_and_limits", (
        "CREATE TABLE certificates (serial TEXT PRIMARY KEY, ek_pseudonym BLOB NOT NULL, app_id TEXT NOT NULL, "
        "ak_name BLOB NOT NULL, issued BIGINT NOT NULL, not_after BIGINT NOT NULL, revoked BIGINT, "
        "revocation_reason TEXT)",
        "CREATE INDEX certificates_pair ON certificates (ek_pseudonym, app_id, issued)",
        "CREATE INDEX certificates_revoked ON certificates (revoked)",
        # one row per (pseudonym, app id): what a finishing enrolment locks while it counts
        "CREATE TABLE enrolment_pairs (ek_pseudonym BLOB NOT NULL, app_id TEXT NOT NULL, "
        "PRIMARY KEY (ek_pseudonym, app_id))",
        "CREATE TABLE limits (id INTEGER PRIMARY KEY CHECK (id = 1), enrolments INTEGER NOT NULL, "
        "window_seconds BIGINT NOT NULL)",
        "INSERT INTO limits (id, enrolments, window_seconds) VALUES (1, 5, 86400)",
    )),
    # AK certificates of the TCG AIK profile repeat the EK certificate's TPM directoryName
    # (WebAuthn's "tpm" attestation requires it): a pending challenge keeps it until finish.
    # NULL for a challenge issued before: its certificate has none.
    ("0003_challenge_tpm_device", (
        "ALTER TABLE challenges ADD COLUMN tpm_device TEXT",
    )),
    # App Attest for Linux: registered WebAuthn credentials and their assertion counters, which
    # every worker raises by one conditional update (invariant 8).
    ("0004_webauthn_credentials", (
        "CREATE TABLE credentials (credential_id BLOB PRIMARY KEY, app_id TEXT NOT NULL, cose_key BLOB NOT NULL, "
        "ak_name BLOB NOT NULL, ak_serial TEXT NOT NULL, counter BIGINT NOT NULL, registered BIGINT NOT NULL, "
        "counter_failed BIGINT)",
    )),
    # Issue 51: a nonce serves one purpose and, when issued for one, one app id (NULL: issued
    # before, either purpose may spend it); receipts of spending requests, for their retries;
    # one lock row per EK pseudonym, under which its pending challenges are counted.
    ("0007_nonce_purpose_and_receipts", (
        "ALTER TABLE nonces ADD COLUMN purpose TEXT",
        "ALTER TABLE nonces ADD COLUMN app_id TEXT",
        "CREATE TABLE receipts (digest BLOB PRIMARY KEY, answer BLOB NOT NULL, expires BIGINT NOT NULL)",
        "CREATE INDEX receipts_expires ON receipts (expires)",
        "CREATE TABLE challenge_eks (ek_pseudonym BLOB PRIMARY KEY)",
        "CREATE INDEX challenges_ek ON challenges (ek_pseudonym, expires)",
    )),
]

#: The name of the newest migration: a store at this schema is current.
LATEST = MIGRATIONS[-1][0]
