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
    # A device is a TPM, not one EK (docs/SERVER-STATE.md, invariants 6 and 11): the EKs proven to
    # be one TPM's, and bans of a device for an app id. Every enrolled pseudonym is a device of its
    # own until a proof links it, and each revocation made before this becomes its device's ban.
    ("0005_devices_and_bans", (
        "CREATE TABLE device_links (ek_pseudonym BLOB PRIMARY KEY, device BLOB NOT NULL)",
        "CREATE INDEX device_links_device ON device_links (device)",
        "INSERT INTO device_links (ek_pseudonym, device) SELECT DISTINCT ek_pseudonym, ek_pseudonym FROM certificates",
        "CREATE TABLE bans (ek_pseudonym BLOB NOT NULL, app_id TEXT NOT NULL, since BIGINT NOT NULL, reason TEXT, "
        "serial TEXT NOT NULL, PRIMARY KEY (ek_pseudonym, app_id))",
        "INSERT INTO bans (ek_pseudonym, app_id, since, reason, serial) SELECT ek_pseudonym, app_id, min(revoked), "
        "min(revocation_reason), min(serial) FROM certificates WHERE revoked IS NOT NULL GROUP BY ek_pseudonym, app_id",
        # the other EKs a pending challenge sealed a secret to: JSON [[kind, pseudonym hex, secret hex], …]
        "ALTER TABLE challenges ADD COLUMN linked TEXT",
    )),
    # Every assertion re-checks its AK certificate (issue 51): the trusted CA its chain ended at
    # (SHA-256 of its SubjectPublicKeyInfo) and the end of its validity. NULL for a credential
    # registered before: refused as credential-unknown until registered again. And a generation
    # that every revocation raises, and the CRL built at one, which every worker serves.
    ("0006_credential_ak_anchor_and_published_crl", (
        "ALTER TABLE credentials ADD COLUMN ak_anchor BLOB",
        "ALTER TABLE credentials ADD COLUMN ak_not_after BIGINT",
        "CREATE TABLE revocation_generation (id INTEGER PRIMARY KEY CHECK (id = 1), generation BIGINT NOT NULL)",
        "INSERT INTO revocation_generation (id, generation) VALUES (1, 0)",
        "CREATE TABLE published_crl (id INTEGER PRIMARY KEY CHECK (id = 1), generation BIGINT NOT NULL, "
        "built BIGINT NOT NULL, der BLOB NOT NULL)",
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
    # Tenants (docs/SERVER-STATE.md, invariant 12): developer accounts, their app ids (each one
    # tenant's at most) and the digests of their API keys.
    ("0008_tenants", (
        "CREATE TABLE tenants (name TEXT PRIMARY KEY, key_digest BLOB NOT NULL UNIQUE, created BIGINT NOT NULL)",
        "CREATE TABLE tenant_apps (app_id TEXT PRIMARY KEY, tenant TEXT NOT NULL REFERENCES tenants (name))",
    )),
    # DeviceCheck for Linux (docs/SERVER-STATE.md, "Device bits", invariant 13): a tenant's three
    # bits of a device, by the tenant's pseudonym of one of its EKs; bits 1, 2, 4; months YYYY-MM.
    ("0009_device_bits", (
        "CREATE TABLE device_bits (tenant TEXT NOT NULL, device_key BLOB NOT NULL, bits INTEGER NOT NULL, "
        "month0 TEXT, month1 TEXT, month2 TEXT, updated BIGINT NOT NULL, PRIMARY KEY (tenant, device_key))",
        "CREATE INDEX device_bits_updated ON device_bits (updated)",
    )),
    # DeviceCheck for Linux's activity level (docs/SERVER-STATE.md, "Device activity", invariant
    # 14): a tenant's count of a device's assertions, this hour and the one before.
    ("0010_device_activity", (
        "CREATE TABLE device_activity (tenant TEXT NOT NULL, device_key BLOB NOT NULL, hour BIGINT NOT NULL, "
        "count INTEGER NOT NULL, previous INTEGER NOT NULL, PRIMARY KEY (tenant, device_key))",
        "CREATE INDEX device_activity_hour ON device_activity (hour)",
    )),
    # A tenant's issue limit (docs/SERVER-STATE.md, "Tenant issues", invariant 15): at most
    # issue_limit nonces and challenges in each window of issue_window seconds, counted in one row
    # per tenant. Tenants added before get the default, 6,000 a minute.
    ("0011_tenant_issue_limits", (
        "ALTER TABLE tenants ADD COLUMN issue_limit BIGINT NOT NULL DEFAULT 6000",
        "ALTER TABLE tenants ADD COLUMN issue_window BIGINT NOT NULL DEFAULT 60",
        "CREATE TABLE tenant_issues (tenant TEXT PRIMARY KEY, window_start BIGINT NOT NULL, issued BIGINT NOT NULL)",
    )),
]

#: The name of the newest migration: a store at this schema is current.
LATEST = MIGRATIONS[-1][0]
