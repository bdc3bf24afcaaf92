"""One set of cases for GNOME Keyring, KeePassXC and KWallet (see conftest.py)."""
import contextlib
import fcntl
import json
import os
import re
import time
import uuid

import pytest

from conftest import KEYRING_CONTROL, NAMES, OWNERS, UUID_V4, envelope, run, secret_service_owner

UUID = UUID_V4


def unique(prefix):
    return f"{prefix}.{uuid.uuid4().hex[:12]}"


def secret_tool_lookup(service, account):
    result = secret_tool("lookup", "service", service, "username", account)
    return result.stdout if result.returncode == 0 else None


@contextlib.contextmanager
def keepassxc_write():
    """The harness's own writes (secret-tool's) keep DeviceID's write discipline on KeePassXC
    (Sources/DeviceID/SecretService/KeePassXCSaves.swift): KeePassXC 2.7 crashes when a write
    reaches it while it saves the database after an earlier one, from 150 ms to about 150 ms plus
    its key derivation after that write. So writes are one at a time, each 2 s after the last one
    ended, under the record lock DeviceID takes on the same record
    ($XDG_RUNTIME_DIR/deviceid-keepassxc, the CLOCK_MONOTONIC millisecond the last write ended)."""
    if os.environ.get("DEVICEID_TEST_PROVIDER") != "keepassxc":
        yield
        return
    record = os.path.join(os.environ["XDG_RUNTIME_DIR"], "deviceid-keepassxc")
    fd = os.open(record, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX)
        text = os.pread(fd, 24, 0).decode()
        last = int(text) if text.isdigit() else None
        now = int(time.monotonic() * 1000)
        if last is not None and last <= now < last + 2000:
            time.sleep((last + 2000 - now) / 1000)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(int(time.monotonic() * 1000)).encode(), 0)
    finally:
        os.close(fd)


def secret_tool(*args, input=None):
    """secret-tool, again (twice at most) when KWallet refused libsecret's Diffie-Hellman key: it
    rejects a public key whose leading byte is zero, which libsecret sends one byte short
    (secretstorage issue #48); secret-tool then says so, or "Can't find session", or its lookup
    fails with no word at all (measured: 7 lookups in 400). DeviceID retries such a session itself. A real "not found"
    is only asked again, never turned into an answer."""
    for _ in range(3):
        with keepassxc_write() if args[0] in ("store", "clear") else contextlib.nullcontext():
            result = run(["secret-tool", *args], input=input)
        refused = ("public key size is invalid" in result.stderr or "Can't find session" in result.stderr
                   or (args[0] == "lookup" and result.stderr == ""))
        if result.returncode == 0 or not refused:
            break
    return result


def secret_tool_store(label, service, account, secret):
    return secret_tool("store", f"--label={label}", "service", service, "username", account, input=secret)


def id_files(store):
    return sorted(p.name for p in store.glob("id-*")) if store.exists() else []


def test_the_secret_service_is_the_daemon_this_lane_started(cli, store, provider):
    """No other Secret Service was activated on the lane's bus (the conftest fixture checks this
    before every lane; here also after DeviceID's calls, which must not change it)."""
    assert run([cli, "get", unique("com.example.owner")]).returncode == 0
    pid, comm = secret_service_owner()
    assert comm in OWNERS[provider][0], f"org.freedesktop.secrets belongs to {comm!r} (PID {pid}), not to {provider}"


def test_get_twice_gives_one_id_in_the_keyring_and_the_mirror(cli, store):
    app = unique("com.example.app")
    first = run([cli, "--json", "get", app])
    second = run([cli, "--json", "get", app])
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    first, second = json.loads(first.stdout), json.loads(second.stdout)
    assert UUID.match(first["id"]) and second["id"] == first["id"]
    assert (first["source"], second["source"]) == ("created", "keyring")
    assert first["file_only"] is False and second["file_only"] is False
    assert secret_tool_lookup("deviceid.app", app) == first["id"], "secret-tool prints exactly the ID"
    assert run([cli, "--backend", "file", "get", app]).stdout.strip() == first["id"], "mirrored"
    assert run([cli, "--backend", "secret-service", "get", app]).stdout.strip() == first["id"]
    assert len(id_files(store)) == 1


def test_secrets_interoperate_with_secret_tool_both_ways(cli, store):
    service = unique("example.service")
    stored = run([cli, "secret", "store", service, "alice"], input="from deviceid")
    assert stored.returncode == 0, stored.stderr
    assert secret_tool_lookup(service, "alice") == "from deviceid"
    tool = secret_tool_store("t", service, "bob", "from secret-tool")
    assert tool.returncode == 0, tool.stderr
    assert run([cli, "secret", "lookup", service, "bob"]).stdout == "from secret-tool"
    # Deleted by DeviceID, gone for secret-tool; cleared by secret-tool, gone for DeviceID.
    assert run([cli, "secret", "delete", service, "bob"]).returncode == 0
    assert secret_tool_lookup(service, "bob") is None
    assert secret_tool("clear", "service", service, "username", "alice").returncode == 0
    assert run([cli, "secret", "lookup", service, "alice"]).returncode == 1, "not found"
    assert run([cli, "secret", "delete", service, "alice"]).returncode == 1


def test_an_upgrade_from_010_changes_no_id(cli, store):
    """0.1.0's exact keyring item and mirror file, written as 0.1.0 wrote them: the same ID comes
    back from both stores; the keyring item is rewritten in the new form; the mirror file keeps
    its format and record, plus one `confirmed=` line (a key=value field 0.1.0 reads and keeps)."""
    app = unique("com.example.upgrade")
    old = str(uuid.uuid4())
    record = f"{old}\ncreated=1764425600\nmachine=000102030405060708090a0b0c0d0e0f\n"
    assert secret_tool_store(f"DeviceID app identifier for {app}", "deviceid.app", app, record).returncode == 0
    store.mkdir(mode=0o700)
    name, data = envelope("deviceid.app", app, record.encode())
    (store / name).write_bytes(data)
    os.chmod(store / name, 0o600)
    got = json.loads(run([cli, "--json", "get", app]).stdout)
    assert got["id"] == old and got["source"] == "keyring"
    assert run([cli, "--backend", "file", "get", app]).stdout.strip() == old
    name, now = envelope("deviceid.app", app, b"")[0], (store / name).read_bytes()
    confirmed = re.search(rb"\nconfirmed=(\d+)\n", now)
    assert confirmed and abs(int(confirmed.group(1)) - time.time()) < 60, now
    _, expected = envelope("deviceid.app", app, record.encode() + b"confirmed=" + confirmed.group(1) + b"\n")
    assert now == expected, "the same record, one field added"
    assert secret_tool_lookup("deviceid.app", app) == old


def test_an_item_kept_by_010_is_read_and_rewritten_with_nothing_lost(cli, store):
    app = unique("com.example.old")
    old = str(uuid.uuid4())
    text = f"{old}\ncreated=1764425600\nmachine=000102030405060708090a0b0c0d0e0f\n"
    assert secret_tool_store(f"DeviceID app identifier for {app}", "deviceid.app", app, text).returncode == 0
    got = json.loads(run([cli, "--json", "--backend", "secret-service", "get", app]).stdout)
    assert got["id"] == old and got["device_changed"] is True, "the 0.1.0 fingerprint was kept"
    assert secret_tool_lookup("deviceid.app", app) == old, "rewritten: the secret is the ID alone"
    search = secret_tool("search", "--all", "service", "deviceid.app", "username", app)
    listing = search.stdout + search.stderr  # secret-tool prints the attributes on stderr
    assert listing.count("attribute.deviceid-created = 1764425600") == 1, listing
    assert "attribute.deviceid-machine = 000102030405060708090a0b0c0d0e0f" in listing
    assert f"label = DeviceID app identifier for {app}" in listing, "readable in a keyring browser"
    assert run([cli, "get", app]).stdout.strip() == old


@pytest.fixture
def kept_then_locked(cli, store):
    """An ID made while the keyring was unlocked; then the default collection is locked for the
    test, and unlocked after it."""
    app = unique("com.example.kept")
    made = run([cli, "get", app])
    assert made.returncode == 0, made.stderr
    assert run([KEYRING_CONTROL, "lock"]).stdout.strip() == "locked"
    yield app, made.stdout.strip()
    assert run([KEYRING_CONTROL, "unlock"]).returncode == 0


def test_locked_is_locked_at_once_and_mints_nothing(cli, store, provider, kept_then_locked):
    old_app, old_id = kept_then_locked
    new_app = unique("com.example.new")
    for args in (["get", new_app], ["--backend", "secret-service", "get", new_app],
                 ["--json", "get", new_app], ["secret", "lookup", "example.service", "alice"]):
        start = time.monotonic()
        result = run([cli] + args)
        elapsed = time.monotonic() - start
        assert result.returncode == 14, (args, result.stderr)
        assert elapsed < 0.5, f"{args}: {elapsed:.2f} s: LOCKED must come at once, not at the deadline"
        assert NAMES[provider] in result.stderr
    assert len(id_files(store)) == 1, "nothing minted"
    mirror = run([cli, "get", old_app])
    assert mirror.returncode == 0 and mirror.stdout.strip() == old_id, "the mirror still answers"
    doctor = run([cli, "--json", "doctor"])
    assert doctor.returncode == 15 and json.loads(doctor.stdout)["healthy"] is False


def test_after_an_unlock_new_ids_are_kept_again(cli, store):
    """Runs after the locked case: the keyring is usable again, for this process and the next."""
    app = unique("com.example.later")
    first = json.loads(run([cli, "--json", "get", app]).stdout)
    assert first["source"] == "created" and first["file_only"] is False, first
    assert secret_tool_lookup("deviceid.app", app) == first["id"]


def test_doctor_names_the_provider_and_proves_a_round_trip(cli, store, provider):
    result = run([cli, "--json", "doctor"])
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["secret service"]["detail"] == f"provided by {NAMES[provider]}"
    assert checks["keyring round trip"]["ok"] is True
    assert report["answering"] == "keyring+file" and report["healthy"] is True
    assert secret_tool_lookup("deviceid.doctor", "probe") is None, "the probe item was deleted"


REMEDIES = {"gnome-keyring": "gnome-keyring-daemon --replace --unlock", "keepassxc": "Secret Service Integration",
            "kwallet": "kwalletmanager5"}


@pytest.mark.no_collection
def test_no_default_collection_is_named_and_no_dead_end(cli, store, provider):
    """The secret-service backend cannot keep the ID and says so; auto keeps a provisional one in
    the file store, with the provider's remedy in its words; no secret is written in plain text."""
    app = unique("com.example.none")
    chosen = run([cli, "--backend", "secret-service", "get", app])
    assert chosen.returncode == 27, (chosen.stdout, chosen.stderr)
    assert "no default collection" in chosen.stderr and NAMES[provider] in chosen.stderr
    assert REMEDIES[provider] in chosen.stderr, chosen.stderr
    assert id_files(store) == [], "nothing minted by the secret-service backend"
    auto = run([cli, "--json", "get", app])
    assert auto.returncode == 0, auto.stderr
    answer = json.loads(auto.stdout)
    assert answer["provisional"] is True and answer["file_only"] is True and answer["source"] == "created"
    assert NAMES[provider] in answer["keyring_error"] and REMEDIES[provider] in answer["keyring_error"]
    assert len(id_files(store)) == 1
    stored = run([cli, "secret", "store", "s", "a"], input="x")
    assert stored.returncode == 28, stored.stderr
    # The keyring may hold the secret in a collection that is not open: never "none".
    for args in (["secret", "lookup", "s", "a"], ["secret", "delete", "s", "a"], ["reset", app]):
        result = run([cli] + args)
        assert result.returncode == 27 and NAMES[provider] in result.stderr, (args, result.stderr)
    doctor = run([cli, "--json", "doctor"])
    assert doctor.returncode == 15
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["default collection"]["ok"] is False and "missing" in checks["default collection"]["detail"]
    assert REMEDIES[provider] in checks["default collection"]["detail"]


def _forked_child_work(app, service):
    import deviceid
    minted = deviceid.get_info(app)
    deviceid.store_secret(service, "acct", b"from a forked child")
    secret = deviceid.lookup_secret(service, "acct")
    deleted = deviceid.delete_secret(service, "acct")
    return minted.id, minted.source, secret, deleted


def test_a_forked_child_reaches_the_provider_too(store):
    """GLib's D-Bus does not survive fork: a child of a process that used it goes through libdbus,
    with the same prompts and lock rules (KeePassXC confirms every write with a prompt, KWallet's
    unlock is one)."""
    import multiprocessing

    import deviceid

    deviceid.set_store_dir(str(store))
    deviceid.lookup_secret("example.parent", "x")  # the parent has used the keyring through GLib
    app, service = unique("com.example.forked"), unique("example.forked")
    with multiprocessing.get_context("fork").Pool(1) as pool:
        minted, source, secret, deleted = pool.apply(_forked_child_work, (app, service))
    assert (source, secret, deleted) == ("created", b"from a forked child", True)
    assert secret_tool_lookup("deviceid.app", app) == minted
    assert secret_tool_lookup(service, "acct") is None
    assert deviceid.get(app) == minted


def test_a_write_in_flight_in_another_process_holds_keepassxc_writes_back(cli, store, provider):
    """A write to KeePassXC holds the user's record lock from its wait to its end (KeePassXCSaves):
    while another process holds it, a DeviceID write to KeePassXC waits, and at its deadline is
    TIMED_OUT with nothing written; GNOME Keyring's and KWallet's writes are not held."""
    record = os.path.join(os.environ["XDG_RUNTIME_DIR"], "deviceid-keepassxc")
    fd = os.open(record, os.O_RDWR | os.O_CREAT, 0o600)
    service = unique("example.inflight")
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX)
        started = time.monotonic()
        held = run([cli, "--timeout", "1000", "secret", "store", service, "acct"], input="v")
        took = time.monotonic() - started
    finally:
        os.close(fd)
    if provider == "keepassxc":
        assert held.returncode == 16, held.stderr
        assert "another process's write to KeePassXC was still under way" in held.stderr, held.stderr
        assert 0.8 <= took < 1.5, took
        assert secret_tool_lookup(service, "acct") is None, "nothing written"
    else:
        assert held.returncode == 0, held.stderr
        assert secret_tool_lookup(service, "acct") == "v"


@pytest.mark.rapid_writes
def test_writes_in_a_row_from_separate_processes_leave_the_provider_running(cli, store, provider, secret_service):
    """KeePassXC 2.7 crashes (SIGSEGV in QUuid::toRfc4122 on its saving thread) when a write
    reaches it while it saves the database after an earlier write; DeviceID's writes wait the
    save out (KeePassXCSaves.swift). A store, then a delete 0.25 s later (inside the save of a
    large database), five times over, each from its own process: the provider still serves,
    under the same PID, and each write did what it was asked."""
    pid = secret_service[0]
    for i in range(5):
        service = unique("example.rapid")
        stored = run([cli, "secret", "store", service, "acct"], input="v")
        assert stored.returncode == 0, stored.stderr
        time.sleep(0.25)
        deleted = run([cli, "secret", "delete", service, "acct"])
        assert deleted.returncode == 0, deleted.stderr
        owner = secret_service_owner()
        assert owner[0] == pid, f"{NAMES[provider]} (PID {pid}) is gone after write pair {i + 1}: {owner}"
        assert secret_tool_lookup(service, "acct") is None, "deleted"
    minted = run([cli, "get", unique("com.example.rapid")])
    assert minted.returncode == 0 and UUID.match(minted.stdout.strip()), minted.stderr
