"""Faults the real gnome-keyring cannot show, from a fault-injecting Secret Service of our own
(Tests/fakes/fake-secret-service) on a private bus; libsecret is pointed at it with
SECRET_SERVICE_BUS_NAME. Each fault must end in its documented status within the deadline, and
nothing may be minted over an item that could not be read."""
import json
import re
import time

import pytest

from conftest import ROOT, run

FAKE = str(ROOT / "Tests" / "fakes" / "fake-secret-service")
# A bus that starts no service on demand: the fake is the only Secret Service on it.
BUS_CONFIG = str(ROOT / "scripts" / "session-no-activation.conf")


def with_fake(mode, script, tmp_path, timeout=90):
    body = f"""
        {FAKE} org.example.FakeSecrets '{mode}' >/dev/null 2>"{tmp_path}/fake.err" &
        gdbus wait --session --timeout 10 org.example.FakeSecrets
        export SECRET_SERVICE_BUS_NAME=org.example.FakeSecrets DEVICEID_STORE_DIR="{tmp_path}/store"
        {script}
    """
    start = time.monotonic()
    result = run(["dbus-run-session", f"--config-file={BUS_CONFIG}", "--", "bash", "-c", body], timeout=timeout)
    return result.stdout, time.monotonic() - start


def statuses(out):
    return dict(re.findall(r"^(\w+)=(\d+)$", out, re.M))


SCRIPT = """
    d() {{ timeout 60 {cli} --timeout 1000 "$@"; }}
    printf v | d --backend secret-service secret store svc acct >/dev/null 2>&1; echo store=$?
    d --backend secret-service secret lookup svc acct >/dev/null 2>&1; echo lookup=$?
    d --backend secret-service get app >/dev/null 2>&1; echo get1=$?
    d --backend secret-service get app >/dev/null 2>&1; echo get2=$?
    d get auto.app >/dev/null 2>&1; echo auto=$?
    ls "$DEVICEID_STORE_DIR" 2>/dev/null | grep -c '^id-' | sed 's/^/files=/'
"""

EXPECTED = {
    # mode:             store lookup get1 get2 auto files
    "healthy":          ("0", "0", "0", "0", "0", "1"),
    "slow":             ("16", "16", "16", "16", "16", "0"),
    "error:SearchItems": ("0", "23", "23", "23", "23", "0"),
    "error:GetSecrets": ("0", "23", "0", "23", "0", "1"),
    "error:ReadAlias":  ("23", "23", "23", "23", "23", "0"),
    "error:CreateItem": ("23", "1", "23", "23", "0", "1"),
    "locked-error":     ("0", "14", "14", "14", "14", "0"),
    "prompt":           ("14", "1", "14", "14", "0", "1"),
    # A peer's Completed for the open prompt counts for nothing: as "prompt" (1.0 before this
    # took the forged item for the one created: store=0, get1=0).
    "forged-prompt":    ("14", "1", "14", "14", "0", "1"),
}


@pytest.mark.parametrize("mode", sorted(EXPECTED))
def test_fault(cli, tmp_path, mode):
    out, elapsed = with_fake(mode, SCRIPT.format(cli=cli), tmp_path)
    got = statuses(out)
    names = ["store", "lookup", "get1", "get2", "auto", "files"]
    assert tuple(got.get(n) for n in names) == EXPECTED[mode], (mode, got)
    assert elapsed < 30, f"{mode}: {elapsed:.1f} s; every call is bounded by the 1 s deadline"


def test_service_vanishing_mid_call_is_not_none(cli, tmp_path):
    """A provider that exits (or crashes) mid-call: the bus answers NoReply at once. That is
    UNAVAILABLE with words that say so, not TIMED_OUT, and never "none": nothing is minted."""
    out, _ = with_fake("vanish", f"""
        start=$(date +%s%N)
        timeout 60 {cli} --timeout 4000 get app >/dev/null 2>"$TMPDIR_FAKE/first.err"; echo first=$?
        echo ms=$(( ($(date +%s%N) - start) / 1000000 ))
        ls "$DEVICEID_STORE_DIR" 2>/dev/null | grep -c '^id-' | sed 's/^/files=/'
        timeout 60 {cli} --timeout 2000 --backend secret-service get app >/dev/null 2>&1; echo gone=$?
    """.replace("$TMPDIR_FAKE", str(tmp_path)), tmp_path)
    got = statuses(out)
    assert got["first"] == "15", ("a provider gone mid-call is UNAVAILABLE", got, (tmp_path / "first.err").read_text())
    assert "the Secret Service provider went away" in (tmp_path / "first.err").read_text()
    assert int(got["ms"]) < 2000, f"{got['ms']} ms: nothing is waited for once the provider is gone"
    assert got["files"] == "0", "nothing minted"
    assert got["gone"] == "15", "once gone, the service is unavailable"


def test_service_vanishing_while_its_prompt_is_open_is_unavailable_at_once(cli, tmp_path):
    """The provider exits while DeviceID waits for its prompt's Completed signal (KeePassXC asks a
    prompt for every write): the wait ends when its bus name goes, not at the deadline."""
    out, _ = with_fake("vanish-in-prompt", f"""
        start=$(date +%s%N)
        printf v | timeout 60 {cli} --timeout 5000 --backend secret-service secret store svc acct \
            >/dev/null 2>"$TMPDIR_FAKE/store.err"; echo store=$?
        echo ms=$(( ($(date +%s%N) - start) / 1000000 ))
    """.replace("$TMPDIR_FAKE", str(tmp_path)), tmp_path)
    got = statuses(out)
    words = (tmp_path / "store.err").read_text()
    assert got["store"] == "15", (got, words)
    assert "the Secret Service provider went away (the prompt was open)" in words, words
    assert int(got["ms"]) < 2500, f"{got['ms']} ms: the wait ended at the deadline, not when the provider left"


def test_a_keyring_that_refuses_the_write_is_reported_and_tried_again(cli, tmp_path):
    """Nothing silent: auto keeps the ID in the file store only, and says so each time, in the
    CLI's JSON, on stderr and through Python's StableID, until the keyring takes it."""
    out, _ = with_fake("error:CreateItem", f"""
        {cli} --json --timeout 2000 get app 2>"{tmp_path}/first.err"
        {cli} --json --timeout 2000 get app 2>/dev/null
        python3 -c 'import deviceid; i = deviceid.get_info("app"); print("py", i.file_only, i.source, i.keyring_error)'
    """, tmp_path)
    first, second, python = out.splitlines()[:3]
    first, second = json.loads(first), json.loads(second)
    assert first["source"] == "created" and first["file_only"] is True
    assert "CreateItem" in first["keyring_error"] or "cannot store the item" in first["keyring_error"]
    assert "kept only in the file store" in (tmp_path / "first.err").read_text()
    assert second["id"] == first["id"] and second["source"] == "file" and second["file_only"] is True, \
        "the next call tried the keyring again (and it refused again)"
    assert python.startswith("py True file kept only in the file store: ")
