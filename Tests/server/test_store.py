"""Every Store answers as docs/SERVER-STATE.md says, on SQLite and on PostgreSQL, and holds its
invariants when many processes race on one database."""
import dataclasses
import datetime
import multiprocessing
import os
import sqlite3

import pytest

from deviceid_verifier import (Ban, IssueLimit, CertificateRecord, DeviceBits, CredentialRecord, Limit, Limited, MemoryStore, NonceState, PendingChallenge,
                               PostgresStore, SQLiteStore, StoreUnavailable, open_store)
from deviceid_verifier._store._migrations import LATEST, MIGRATIONS
from deviceid_verifier._store._sql import micros

T0 = datetime.datetime(2026, 12, 2, 12, 0, 0)
SECOND = datetime.timedelta(seconds=1)
RACERS = 24


def record(serial, pseudonym=b"p" * 32, app_id="com.example.a", issued=T0, not_after=T0 + 365 * 86400 * SECOND):
    return CertificateRecord(serial, pseudonym, app_id, b"\x00\x0b" + bytes(32), issued, not_after)


def pending(expires=T0 + 300 * SECOND, pseudonym=b"p" * 32):
    return PendingChallenge(b"s" * 32, b"ak-public", "com.example.a", pseudonym, expires)


def credential(counter=0, app_id="com.example.a", serial=0xABC):
    return CredentialRecord(b"c" * 32, app_id, b"cose-key", b"\x00\x0b" + bytes(32), serial, counter, T0)


@pytest.mark.memory_too
def test_a_credential_registered_again_keeps_its_higher_counter_and_its_mark(database_url):
    store = open_store(database_url)
    assert store.credential(b"c" * 32) is None
    assert store.add_credential(credential(counter=0)) == credential(counter=0)
    assert store.advance_counter(b"c" * 32, 7, T0 + SECOND) is True
    assert store.advance_counter(b"c" * 32, 7, T0 + 2 * SECOND) is False
    assert store.advance_counter(b"c" * 32, 3, T0 + 3 * SECOND) is False  # the first mark stays
    again = store.add_credential(credential(counter=0, serial=0xDEF))
    assert again == dataclasses.replace(credential(counter=7, serial=0xDEF), counter_failed=T0 + 2 * SECOND)
    assert store.credential(b"c" * 32) == again
    assert store.add_credential(credential(app_id="com.example.b")) is None, "an id is one app's"
    assert store.credential(b"c" * 32) == again
    assert store.advance_counter(b"u" * 32, 1, T0) is False and store.credential(b"u" * 32) is None
    assert store.advance_counter(b"c" * 32, 2**32 - 1, T0) is True


def test_open_store_picks_the_store_by_scheme(database_url):
    store = open_store(database_url)
    assert isinstance(store, SQLiteStore if database_url.startswith("sqlite") else PostgresStore)
    assert store.applied_migrations() == [name for name, _ in MIGRATIONS]
    assert isinstance(open_store("memory:"), MemoryStore)
    for bad in ("mysql://x/y", "sqlite://host/x", "sqlite:", "nothing"):
        with pytest.raises(ValueError):
            open_store(bad)


@pytest.mark.memory_too
def test_a_nonce_is_fresh_once(database_url):
    store = open_store(database_url)
    store.add_nonce(b"n" * 32, T0 + 300 * SECOND)
    assert store.use_nonce(b"n" * 32, T0) is NonceState.FRESH
    assert store.use_nonce(b"n" * 32, T0) is NonceState.USED
    assert store.use_nonce(b"m" * 32, T0) is NonceState.UNKNOWN


@pytest.mark.memory_too
def test_an_expired_nonce_is_expired_then_used_then_unknown_after_purge(database_url):
    store = open_store(database_url)
    store.add_nonce(b"n" * 32, T0)
    assert store.use_nonce(b"n" * 32, T0 + SECOND) is NonceState.EXPIRED
    assert store.use_nonce(b"n" * 32, T0 + SECOND) is NonceState.USED
    store.purge(T0 + SECOND)
    assert store.use_nonce(b"n" * 32, T0 + SECOND) is NonceState.UNKNOWN


@pytest.mark.memory_too
def test_a_challenge_is_taken_once_and_not_after_expiry(database_url):
    store = open_store(database_url)
    store.add_challenge("a" * 32, pending())
    store.add_challenge("b" * 32, pending())
    assert store.take_challenge("a" * 32, T0) == pending()
    assert store.take_challenge("a" * 32, T0) is None
    assert store.take_challenge("b" * 32, T0 + 301 * SECOND) is None  # expired: gone too
    assert store.take_challenge("b" * 32, T0) is None


@pytest.mark.memory_too
def test_the_limit_counts_a_sliding_window_and_says_when_to_retry(database_url):
    store = open_store(database_url)
    limit = Limit(2, datetime.timedelta(hours=1))
    assert store.add_certificate(record(1, issued=T0), limit) is None
    assert store.add_certificate(record(2, issued=T0 + 600 * SECOND), limit) is None
    refused = store.add_certificate(record(3, issued=T0 + 900 * SECOND), limit)
    assert refused == Limited(T0 + 3600 * SECOND)  # when the first leaves the window
    assert store.limited(b"p" * 32, "com.example.a", limit, T0 + 900 * SECOND) == refused
    assert store.certificate(3) is None
    # another app id, another EK: their own windows
    assert store.add_certificate(record(4, app_id="com.example.b", issued=T0 + 900 * SECOND), limit) is None
    assert store.add_certificate(record(5, pseudonym=b"q" * 32, issued=T0 + 900 * SECOND), limit) is None
    # an hour after the first, one place is free again
    assert store.add_certificate(record(6, issued=T0 + 3600 * SECOND), limit) is None
    assert store.enrolments(b"p" * 32, "com.example.a", T0 - SECOND) == 3


@pytest.mark.memory_too
def test_revocation_is_monotonic_and_lists_only_live_certificates(database_url):
    store = open_store(database_url)
    limit = Limit(10, datetime.timedelta(days=1))
    store.add_certificate(record(0xABCDEF0123456789ABCDEF0123456789ABCDEF01), limit)  # 160 bits
    store.add_certificate(record(2, b"q" * 32, not_after=T0 + SECOND), limit)  # another device
    assert store.revoke(0xABCDEF0123456789ABCDEF0123456789ABCDEF01, "key-compromise", T0)
    assert not store.revoke(0xABCDEF0123456789ABCDEF0123456789ABCDEF01, "again", T0 + SECOND)
    assert not store.revoke(99, "unknown", T0)
    assert store.revoke(2, "superseded", T0)
    got = store.certificate(0xABCDEF0123456789ABCDEF0123456789ABCDEF01)
    assert (got.revoked, got.revocation_reason) == (T0, "key-compromise")
    assert [serial for serial, _ in store.revoked(T0)] == [2, 0xABCDEF0123456789ABCDEF0123456789ABCDEF01]
    assert [serial for serial, _ in store.revoked(T0 + 2 * SECOND)] == [0xABCDEF0123456789ABCDEF0123456789ABCDEF01]


def test_the_limit_is_an_operators_setting_kept_in_the_database(database_url):
    store = open_store(database_url)
    assert store.limit() == Limit(5, datetime.timedelta(days=1))
    store.set_limit(Limit(3, datetime.timedelta(minutes=10)))
    assert open_store(database_url).limit() == Limit(3, datetime.timedelta(minutes=10))


def test_migrations_from_empty_and_from_the_previous_version(database_url):
    store = open_store(database_url, migrate=False)
    assert store.applied_migrations() == []
    assert store.migrate(until="0001_nonces_and_challenges") == ["0001_nonces_and_challenges"]
    old = pending()
    with store._tx() as cursor:  # 0001's state survives the later migrations
        for nonce in (b"n" * 32, b"w" * 32):  # nonces before 0007's purpose: either purpose spends them
            cursor.execute("INSERT INTO nonces (nonce, expires, used) VALUES (?, ?, ?)",
                           (nonce, micros(T0 + 300 * SECOND), False))
        # a challenge as 0.3 wrote it, before 0003's tpm_device column
        cursor.execute("INSERT INTO challenges (id, secret, ak_public, app_id, ek_pseudonym, expires) "
                       "VALUES (?, ?, ?, ?, ?, ?)",
                       ("c" * 32, old.secret, old.ak_public, old.app_id, old.ek_pseudonym, micros(old.expires)))
    assert store.migrate() == [name for name, _ in MIGRATIONS[1:]] and MIGRATIONS[-1][0] == LATEST
    assert store.migrate() == []
    assert store.use_nonce(b"n" * 32, T0) is NonceState.FRESH
    assert store.use_nonce(b"w" * 32, T0, "webauthn", "com.example.any") is NonceState.FRESH
    assert store.take_challenge("c" * 32, T0) == old and old.tpm_device == ""
    device = dataclasses.replace(pending(), tpm_device="2.23.133.2.3=id:20191023,2.23.133.2.2=swtpm,2.23.133.2.1=id:00001014")
    store.add_challenge("d" * 32, device)
    assert store.take_challenge("d" * 32, T0) == device
    assert store.add_certificate(record(7), store.limit()) is None
    assert store.add_credential(credential()) == credential()  # 0004


def test_migration_0005_makes_each_revocation_of_1_0_its_devices_ban(database_url):
    """A 1.0 database revoked certificates one by one; after 0005 the device of a revoked one is
    banned for its app id (issue 51, case 1), its other certificates are judged by that ban, and
    a device never revoked enrols as before."""
    store = open_store(database_url, migrate=False)
    store.migrate(until="0004_webauthn_credentials")
    with store._tx() as cursor:  # as 1.0 wrote them: two of one EK and app, the first revoked; one of another EK
        for serial, pseudonym, revoked in ((1, b"p" * 32, T0), (2, b"p" * 32, None), (3, b"q" * 32, None)):
            cursor.execute("INSERT INTO certificates (serial, ek_pseudonym, app_id, ak_name, issued, not_after, revoked, "
                           "revocation_reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                           (format(serial, "x"), pseudonym, "com.example.a", b"name", micros(T0), micros(T0 + SECOND * 86400),
                            None if revoked is None else micros(revoked), None if revoked is None else "fraud"))
    assert store.migrate(until="0005_devices_and_bans") == ["0005_devices_and_bans"]
    assert store.banned(b"p" * 32, "com.example.a") == Ban(T0, "fraud", 1)
    assert store.banned(b"p" * 32, "com.example.b") is None and store.banned(b"q" * 32, "com.example.a") is None
    assert store.device(b"p" * 32) == b"p" * 32 and store.device(b"q" * 32) == b"q" * 32
    assert store.add_certificate(record(4), store.limit()) == Ban(T0, "fraud", 1)
    assert store.add_certificate(record(5, b"q" * 32), store.limit()) is None


def test_a_credential_of_1_0_reads_back_without_ak_anchor_after_migration_0006(database_url):
    """Migration 0006 adds what assertions re-check of the AK certificate; a credential 1.0
    registered has none (its assertions are credential-unknown until registered again), and
    keeps everything else; registering it again fills them in."""
    store = open_store(database_url, migrate=False)
    store.migrate(until="0004_webauthn_credentials")
    old = credential(counter=3)
    with store._tx() as cursor:
        cursor.execute("INSERT INTO credentials (credential_id, app_id, cose_key, ak_name, ak_serial, counter, "
                       "registered) VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (old.credential_id, old.app_id, old.cose_key, old.ak_name, format(old.ak_serial, "x"),
                        old.counter, micros(old.registered)))
    store.migrate()
    assert store.credential(old.credential_id) == old and old.ak_anchor is None and old.ak_not_after is None
    assert store.revocation_generation() == 0 and store.published_crl() is None
    again = dataclasses.replace(credential(counter=0), ak_anchor=b"a" * 32, ak_not_after=T0 + SECOND)
    assert store.add_credential(again) == dataclasses.replace(again, counter=3)


@pytest.mark.memory_too
def test_a_tenant_is_issued_its_limit_per_window_and_no_other_tenant_is_counted(database_url):
    """Invariant 15: the limit's issues pass in a window, the next is LIMITED until the window's end
    and adds nothing; another tenant's count is its own; the next window counts from one; a host
    whose clock is behind counts into the newer window, never back into an older one."""
    store = open_store(database_url)
    limit = IssueLimit(3, datetime.timedelta(seconds=600))
    start = datetime.datetime(2026, 12, 2, 12, 0)  # a window's start: 600 s divide the hour
    nonces = (b"%31dn" % i for i in range(100))

    def issue(tenant, at):
        nonce = next(nonces)
        limited = store.add_tenant_nonce(nonce, at + SECOND, "attestation", None, tenant, limit, at)
        assert store.use_nonce(nonce, at) == (NonceState.UNKNOWN if limited else NonceState.FRESH)
        return limited

    assert [issue("busy", start + i * SECOND) for i in range(4)] == [None, None, None,
                                                                    Limited(start + 600 * SECOND)]
    assert [issue("calm", start + 5 * SECOND) for _ in range(4)] == [None, None, None, Limited(start + 600 * SECOND)]
    assert issue("busy", start + 599 * SECOND) == Limited(start + 600 * SECOND)
    later = start + 600 * SECOND
    assert [issue("busy", later), issue("busy", later - SECOND), issue("busy", later)] == [None, None, None]
    assert issue("busy", later - SECOND) == Limited(later)  # behind: still the newer window's count
    assert issue("busy", later + SECOND) == Limited(later + 600 * SECOND)
    assert store.remove_tenant("busy") is False  # never added: its count is removed all the same
    assert issue("busy", later) is None


@pytest.mark.memory_too
def test_a_checked_assertion_writes_only_for_a_credential_that_passes(database_url):
    """checked_spend_assertion: the credential, its certificate's record and its device's ban read
    at once, and the challenge and counter written only when the credential is of the app, of a
    trusted anchor, unexpired (its last second included), and neither revoked nor banned; else
    nothing changes and what was read says why."""
    store = open_store(database_url)
    anchor, app = b"a" * 32, "com.example.a"
    store.add_certificate(record(0xABC), Limit(10, datetime.timedelta(days=1)))
    store.add_certificate(record(0xDEF, pseudonym=b"q" * 32), Limit(10, datetime.timedelta(days=1)))  # another EK's
    stored = store.add_credential(dataclasses.replace(credential(counter=1), ak_anchor=anchor,
                                                      ak_not_after=T0 + 10 * SECOND))
    challenges = (b"%31dn" % i for i in range(100))

    def attempt(app_id=app, anchors=frozenset({anchor}), at=T0, counter=2, key=b"cose-key"):
        nonce = next(challenges)
        store.add_nonce(nonce, T0 + 300 * SECOND, "webauthn", app_id)
        checked = store.checked_spend_assertion(b"c" * 32, app_id, key, anchors, nonce, at, counter, None, at + SECOND)
        if checked.spent is None:  # nothing written: the challenge is still fresh
            assert store.use_nonce(nonce, at, "webauthn", app_id) is NonceState.FRESH
        return checked

    for refused in (attempt(app_id="com.example.b"), attempt(key=b"another key"), attempt(anchors=frozenset()),
                    attempt(anchors=frozenset({b"b" * 32})), attempt(at=T0 + 11 * SECOND)):
        assert (refused.credential, refused.certificate, refused.ban, refused.spent) == (
            stored, store.certificate(0xABC), None, None)
    assert store.credential(b"c" * 32) == stored
    assert attempt(at=T0 + 10 * SECOND).spent == (NonceState.FRESH, b"accepted")
    assert attempt(counter=2).spent == (NonceState.FRESH, b"counter")  # spent, and the credential marked
    assert store.credential(b"c" * 32).counter_failed == T0
    assert store.revoke(0xDEF, "key-compromise", T0)  # another device's: nothing of this credential's
    assert attempt(counter=3).spent == (NonceState.FRESH, b"accepted")
    store.link([b"p" * 32, b"q" * 32])  # proven one TPM: its ban is this credential's device's
    banned = attempt(counter=4)
    assert (banned.spent, banned.certificate.revoked, banned.ban.serial) == (None, None, 0xDEF)
    assert store.lift(0xDEF) == 1 and attempt(counter=4).spent == (NonceState.FRESH, b"accepted")
    assert store.revoke(0xABC, "superseded", T0) and store.lift(0xABC) == 1  # revoked, and no longer banned
    revoked = attempt(counter=5)
    assert (revoked.spent, revoked.certificate.revoked, revoked.ban) == (None, T0, None)
    assert store.credential(b"c" * 32).counter == 4
    unknown = store.checked_spend_assertion(b"u" * 32, app, b"cose-key", frozenset({anchor}), b"n" * 32, T0, 3, None, T0)
    assert (unknown.credential, unknown.certificate, unknown.ban, unknown.spent) == (None, None, None, None)
    # a certificate this store did not issue: nothing to revoke here (an app server's own CA's CRL decides)
    store.add_credential(dataclasses.replace(credential(counter=1, serial=0x123), credential_id=b"e" * 32,
                                             ak_anchor=anchor, ak_not_after=T0 + 10 * SECOND))
    store.add_nonce(b"m" * 32, T0 + SECOND, "webauthn", app)
    foreign = store.checked_spend_assertion(b"e" * 32, app, b"cose-key", frozenset({anchor}), b"m" * 32, T0, 2, None, T0)
    assert (foreign.certificate, foreign.ban, foreign.spent) == (None, None, (NonceState.FRESH, b"accepted"))


def _race_nonce(store):
    return store.use_nonce(b"n" * 32, T0).value


def _race_challenge(store):
    return store.take_challenge("c" * 32, T0) is not None


def _race_enrolment(store, serial):
    return store.add_certificate(record(serial, issued=T0 + serial * datetime.timedelta(microseconds=1)),
                                 Limit(3, datetime.timedelta(hours=1))) is None


def _racer(url, operation, args, start, out):
    store = open_store(url, migrate=False)
    start.wait()
    try:
        out.put(operation(store, *args))
    except Exception as e:  # reported, so that a failure says what happened
        out.put(f"{type(e).__name__}: {e}")


def _race(url, operation, args_of=lambda i: ()):
    """RACERS processes, each with its own store on `url`, run operation(store, *args_of(i)) at once."""
    context = multiprocessing.get_context("fork")
    start, out = context.Event(), context.Queue()
    processes = [context.Process(target=_racer, args=(url, operation, args_of(i), start, out)) for i in range(RACERS)]
    for p in processes:
        p.start()
    start.set()
    results = [out.get(timeout=60) for _ in processes]
    for p in processes:
        p.join(timeout=60)
        assert p.exitcode == 0, results
    return results


def _race_counter(store, counter):
    return store.advance_counter(b"c" * 32, counter, T0)


def test_24_processes_race_to_one_counter_value_one_wins(database_url):
    open_store(database_url).add_credential(credential(counter=5))
    results = _race(database_url, _race_counter, lambda i: (6,))
    assert sorted(results, key=str) == [False] * (RACERS - 1) + [True], results
    stored = open_store(database_url).credential(b"c" * 32)
    assert (stored.counter, stored.counter_failed) == (6, T0), "the losers marked the credential"


def _race_assertion(store, i):
    state, answer = store.spend_assertion(b"%31d" % i + b"n", T0, "com.example.a", b"c" * 32, 6, b"%31d" % i + b"r",
                                          T0 + SECOND)
    return state.value, answer, store.receipt(b"%31d" % i + b"r", T0)


def test_24_processes_race_assertions_of_one_counter_value_one_wins(database_url):
    """Invariant 8 through spend_assertion (PostgreSQL: one statement of several updates): of 24
    assertions with one counter, each on a challenge of its own, one is accepted; the others
    spend their challenges, mark the credential, and each keeps the answer it was given."""
    store = open_store(database_url)
    store.add_credential(credential(counter=5))
    for i in range(RACERS):
        store.add_nonce(b"%31d" % i + b"n", T0 + 300 * SECOND, "webauthn", "com.example.a")
    results = _race(database_url, _race_assertion, lambda i: (i,))
    assert sorted(results) == [("fresh", b"accepted", b"accepted")] + [("fresh", b"counter", b"counter")] * (
        RACERS - 1), results
    stored = store.credential(b"c" * 32)
    assert (stored.counter, stored.counter_failed) == (6, T0), "the losers did not mark the credential"


def test_24_processes_race_with_24_counters_the_highest_stays(database_url):
    open_store(database_url).add_credential(credential())
    results = _race(database_url, _race_counter, lambda i: (i + 1,))
    assert True in results and open_store(database_url).credential(b"c" * 32).counter == RACERS, results


def _race_bits(store, i):
    bits = ((i & 1) == 1, (i & 2) == 2, True)
    return store.write_bits("tenant", b"k" * 32, bits, T0 + i * 32 * 86400 * SECOND)  # a month of its own each


def test_24_processes_racing_bit_writes_leave_one_writes_value(database_url):
    """Invariant 11 (issue 55: "two instances racing bit writes leave one value"): the record
    holds exactly one racer's bits, stamped with that racer's time, and its months are those a
    sequence of the writes gives: bit 2, true in every write, changed only in the first write
    to commit, so its month is not the last writer's — unless that writer read a stale record."""
    open_store(database_url)  # migrated before the racers open it
    results = _race(database_url, _race_bits, lambda i: (i,))
    assert all(isinstance(r, DeviceBits) for r in results), results
    stored = open_store(database_url).device_bits("tenant", [b"k" * 32])
    winner = [r for r in results if r.updated == stored.updated]
    assert len(winner) == 1 and stored == winner[0], (stored, results)
    first = [r for r in results if r.months[2] == r.updated.strftime("%Y-%m")]
    assert len(first) == 1 and stored.months[2] == first[0].months[2] != stored.updated.strftime("%Y-%m"), results


def test_24_processes_race_for_one_nonce_one_wins(database_url):
    open_store(database_url).add_nonce(b"n" * 32, T0 + 300 * SECOND)
    results = _race(database_url, _race_nonce)
    assert sorted(results) == ["fresh"] + ["used"] * (RACERS - 1), results


def test_24_processes_race_for_one_challenge_one_wins(database_url):
    open_store(database_url).add_challenge("c" * 32, pending())
    results = _race(database_url, _race_challenge)
    assert sorted(results, key=str) == [False] * (RACERS - 1) + [True], results


def test_24_processes_race_past_a_limit_of_3_three_pass(database_url):
    store = open_store(database_url)
    results = _race(database_url, _race_enrolment, lambda i: (i + 1,))
    assert sorted(results, key=str) == [False] * (RACERS - 3) + [True] * 3, results
    assert store.enrolments(b"p" * 32, "com.example.a", T0 - SECOND) == 3


def test_a_database_that_does_not_answer_is_unavailable_not_empty(tmp_path, postgresql):
    closed = f"postgresql://postgres@127.0.0.1:{postgresql.port + 0}/nosuchdatabase"
    with pytest.raises(StoreUnavailable):
        open_store(closed)
    path = tmp_path / "locked.sqlite3"
    store = open_store(f"sqlite:///{path}")
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        import deviceid_verifier._store._sqlite as module
        module.BUSY_TIMEOUT_SECONDS, saved = 0.2, module.BUSY_TIMEOUT_SECONDS
        try:
            with pytest.raises(StoreUnavailable):
                open_store(f"sqlite:///{path}").use_nonce(b"n" * 32, T0)
        finally:
            module.BUSY_TIMEOUT_SECONDS = saved
    finally:
        blocker.execute("ROLLBACK")
    assert store.use_nonce(b"n" * 32, T0) is NonceState.UNKNOWN


def test_the_sqlite_file_is_private(tmp_path):
    open_store(f"sqlite:///{tmp_path}/new.sqlite3")
    assert os.stat(tmp_path / "new.sqlite3").st_mode & 0o777 == 0o600


@pytest.mark.memory_too
def test_the_boundaries_are_the_documented_ones(database_url):
    """docs/SERVER-STATE.md: a nonce or challenge is good through its expiry instant; a certificate
    issued exactly one window before counts no more."""
    store = open_store(database_url)
    store.add_nonce(b"n" * 32, T0)
    assert store.use_nonce(b"n" * 32, T0) is NonceState.FRESH
    store.add_challenge("c" * 32, pending(expires=T0))
    assert store.take_challenge("c" * 32, T0) == pending(expires=T0)
    limit = Limit(1, datetime.timedelta(hours=1))
    assert store.add_certificate(record(1, issued=T0), limit) is None
    assert store.add_certificate(record(2, issued=T0 + 3599 * SECOND), limit) == Limited(T0 + 3600 * SECOND)
    assert store.add_certificate(record(3, issued=T0 + 3600 * SECOND), limit) is None
