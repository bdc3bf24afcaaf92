"""The first hour of a new user (issue "The first hour"): each case here failed on 0.3.0.

Secrets never land in plain text unless the file backend was chosen; a first get into a fresh
store loses nothing under valgrind; a keyring with no default collection is no dead end; doctor
tells the truth about a locked keyring; the smaller points of the same first hour."""
import inspect
import json
import os
import re
import stat

import pytest

from conftest import KEYRING_CONTROL, ROOT, UNDER_VALGRIND, UUID_V4_TEXT, in_fresh_keyring, run, tool

SECRET = "hunter2-first-hour"


def no_keyring_env(tmp_path):
    """ssh, cron, a server: no session bus at all, a new home (XDG_DATA_HOME wins over root's
    machine-wide /var/lib/deviceid)."""
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    return {"DBUS_SESSION_BUS_ADDRESS": None, "XDG_RUNTIME_DIR": str(runtime), "DEVICEID_STORE_DIR": None,
            "HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "home" / ".local" / "share")}


def files_holding(root, needle):
    found = []
    for folder, _, names in os.walk(root):
        for name in names:
            with open(os.path.join(folder, name), "rb") as f:
                if needle.encode() in f.read():
                    found.append(os.path.join(folder, name))
    return found


# -- 1. a secret never lands in plain text unless the caller chose it ---------------------------

def test_auto_without_a_keyring_refuses_to_write_a_secret_in_plain_text(cli, tmp_path):
    env = no_keyring_env(tmp_path)
    refused = run([cli, "--json", "secret", "store", "svc", "acct"], input=SECRET, env=env)
    assert refused.returncode == 28, (refused.stdout, refused.stderr)
    error = json.loads(refused.stderr)["error"]
    assert (error["status"], error["name"]) == (-18, "NO_KEYRING")
    for remedy in ("no session bus", "--backend file", "GNOME Keyring", "plain text"):
        assert remedy in error["message"], (remedy, error["message"])
    assert files_holding(tmp_path, SECRET) == [], "nothing of the secret is on disk"
    assert run([cli, "secret", "lookup", "svc", "acct"], env=env).returncode == 1, "and nothing was stored"


def test_python_and_c_refuse_alike(tmp_path):
    script = (
        "import deviceid, sys\n"
        "try:\n"
        f"    deviceid.store_secret('svc', 'acct', b'{SECRET}')\n"
        "except deviceid.NoKeyringError as e:\n"
        "    print(e.status, e.name)\n"
    )
    result = run(["python3", "-c", script], env=no_keyring_env(tmp_path))
    assert result.stdout.split() == ["-18", "NO_KEYRING"], result.stderr
    assert files_holding(tmp_path, SECRET) == []


def test_the_chosen_file_backend_says_where_the_secret_went(cli, tmp_path):
    env = dict(no_keyring_env(tmp_path), DEVICEID_BACKEND="file")
    stored = run([cli, "--json", "secret", "store", "svc", "acct"], input=SECRET, env=env)
    assert stored.returncode == 0, stored.stderr
    answer = json.loads(stored.stdout)
    assert answer["location"] == "plaintext-file" and answer["stored"] is True
    path = answer["path"]
    assert files_holding(tmp_path, SECRET) == [path], "the one file it names, and no other"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    assert "plain text" in stored.stderr and path in stored.stderr


def test_a_plaintext_secret_from_before_is_read_with_a_note_and_can_move_to_the_keyring(cli, tmp_path):
    # One store for both sessions (scripts/with-keyring makes a home of its own).
    env = dict(no_keyring_env(tmp_path), DEVICEID_STORE_DIR=str(tmp_path / "store"))
    run([cli, "--backend", "file", "secret", "store", "svc", "acct"], input=SECRET, env=env)
    [path] = files_holding(tmp_path, SECRET)
    read = run([cli, "--json", "secret", "lookup", "svc", "acct"], env=env)
    assert read.returncode == 0 and json.loads(read.stdout)["secret"] == SECRET
    assert json.loads(read.stdout)["location"] == "plaintext-file"
    assert "note: this secret is kept in plain text in " + path in read.stderr
    assert "deviceid --backend file secret delete" in read.stderr, "and how to move it"
    # A keyring appears (the desktop session): the secret is stored again there, and the file copy,
    # which DeviceID leaves alone (a file-backend program may rely on it), deleted by hand.
    result = in_fresh_keyring(f"""
        {cli} --json secret lookup svc acct
        {cli} secret lookup svc acct | {cli} --json secret store svc acct
        {cli} --json secret lookup svc acct
        secret-tool lookup service svc username acct; echo
        [ -e "{path}" ] && echo "file kept"
        {cli} --backend file secret delete svc acct && echo "file deleted"
        {cli} --json secret lookup svc acct
    """, env={"DEVICEID_STORE_DIR": env["DEVICEID_STORE_DIR"]})
    lines = result.stdout.splitlines()
    assert json.loads(lines[0])["location"] == "plaintext-file", "the keyring has no copy yet: the file answers"
    assert json.loads(lines[1])["location"] == "keyring"
    assert json.loads(lines[2])["location"] == "keyring" and json.loads(lines[2])["secret"] == SECRET
    assert lines[3] == SECRET, "secret-tool reads it from the keyring"
    assert lines[4:6] == ["file kept", "file deleted"], result.stdout + result.stderr
    assert json.loads(lines[6])["location"] == "keyring"
    assert files_holding(tmp_path, SECRET) == [], "the plaintext file is gone"


# -- 2. nothing definitely lost for a first get into a fresh store -----------------------------

def definitely_lost(args, env):
    result = run(["valgrind", "--leak-check=full", "--errors-for-leak-kinds=definite", "--error-exitcode=99",
                  *args], env={**env, **UNDER_VALGRIND}, timeout=300)
    assert "definitely lost" in result.stderr or "no leaks are possible" in result.stderr, result.stderr[-2000:]
    return result


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["file", "auto"])
def test_a_first_get_into_a_fresh_store_loses_nothing(cli, c_example, tmp_path, backend):
    """0.3.0: 120 bytes in 3 blocks (file), 160 in 4 (auto), from StoreDirectory's failed init."""
    for program in (cli, c_example):
        env = dict(no_keyring_env(tmp_path / os.path.basename(program)), DEVICEID_BACKEND=backend)
        args = [program, "get", "com.example.fresh"] if program == cli else [program, "com.example.fresh"]
        result = definitely_lost(args, env)
        assert result.returncode == 0, (program, result.stderr[-3000:])


@pytest.mark.slow
def test_a_first_get_through_the_keyring_loses_nothing(cli, tmp_path):
    result = in_fresh_keyring(f"""
        for backend in auto secret-service; do
            XDG_DATA_HOME=$HOME/new-$backend DEVICEID_BACKEND=$backend valgrind --leak-check=full \\
                --errors-for-leak-kinds=definite --error-exitcode=99 {cli} get com.example.fresh >/dev/null 2>"$HOME/$backend.log"
            echo "$backend $? $(grep -c 'definitely lost: 0 bytes' "$HOME/$backend.log")"
        done
    """, env=UNDER_VALGRIND, timeout=300)
    assert result.stdout.split("\n")[:2] == ["auto 0 1", "secret-service 0 1"], result.stdout + result.stderr[-2000:]


# -- 3. a keyring with no default collection is no dead end ------------------------------------

def test_no_default_collection_gives_a_provisional_id_that_the_keyring_takes_later(cli, tmp_path):
    result = in_fresh_keyring(f"""
        {cli} --json get com.example.none 2>"$HOME/get.err"; echo "rc=$?"
        cat "$HOME/get.err"
        {cli} --backend secret-service get com.example.none; echo "rc=$?"
        {cli} reset com.example.none; echo "reset rc=$?"
        {cli} secret lookup svc acct; echo "lookup rc=$?"
        printf '%s' fresh-password | gnome-keyring-daemon --replace --unlock --components=secrets >/dev/null 2>&1
        gdbus wait --session --timeout 10 org.freedesktop.secrets
        {cli} --json get com.example.none
        secret-tool lookup service deviceid.app username com.example.none; echo
    """, no_unlock=True)
    out = result.stdout.splitlines()
    first = json.loads(out[0])
    assert out[1] == "rc=0", result.stdout + result.stderr
    assert first["provisional"] is True and first["file_only"] is True and first["source"] == "created"
    assert "no default collection" in first["keyring_error"] and "gnome-keyring-daemon --replace --unlock" in first["keyring_error"]
    assert "seahorse" in result.stdout, "the note names the remedy"
    ss = out.index("rc=27")
    assert ss > 1, "the secret-service backend, chosen, still refuses: it cannot keep the ID"
    # The ID may be in a collection that is not open: a reset cannot reach it, a lookup cannot
    # say "none".
    assert out[ss + 1:ss + 3] == ["reset rc=27", "lookup rc=27"], result.stdout + result.stderr
    later = json.loads(out[ss + 3])
    assert later["id"] == first["id"] and later["location"] == "keyring" and later["provisional"] is False
    assert out[ss + 4] == first["id"], "the keyring holds the same ID now"


def test_no_default_collection_where_ids_are_kept_in_a_keyring_is_an_error_with_a_remedy(cli, tmp_path):
    """Once the keyring held an ID, its collection gone is never "none": nothing is minted."""
    result = in_fresh_keyring(f"""
        {cli} get com.example.kept >/dev/null
        gdbus call --session --dest org.freedesktop.secrets --object-path /org/freedesktop/secrets/collection/login \\
            --method org.freedesktop.Secret.Collection.Delete >/dev/null
        {cli} get com.example.other; echo "rc=$?"
    """)
    assert "rc=27" in result.stdout, result.stdout + result.stderr
    assert "keeps IDs in a keyring" in result.stderr and "seahorse" in result.stderr


# -- 4. doctor tells the truth when the keyring is locked --------------------------------------

def test_doctor_with_a_locked_keyring_says_where_the_ids_are_and_how_to_unlock(cli, store, keyring):
    assert run([cli, "get", "com.example.doctor"]).returncode == 0
    run([KEYRING_CONTROL, "lock"])
    report = json.loads(run([cli, "--json", "doctor"]).stdout)
    assert (report["kept_in"], report["answering"]) == ("keyring+file", "file")
    text = run([cli, "doctor"]).stdout
    assert "identifiers are kept in: keyring+file" in text
    assert "answering now: file (the keyring does not: default collection: locked" in text
    assert "printf '%s' PASSWORD | gnome-keyring-daemon --replace --unlock" in text
    interactive = run([cli, "--interactive", "get", "com.example.doctor2"], env={"DISPLAY": None, "WAYLAND_DISPLAY": None})
    assert interactive.returncode == 14, interactive.stderr
    assert "no display to show it on" in interactive.stderr


# -- 8. the smaller points ---------------------------------------------------------------------

def test_an_empty_argument_is_a_usage_error(cli, store):
    for args in (["get", ""], ["reset", ""], ["secret", "store", "", "a"], ["vendor", "get", ""]):
        result = run([cli, *args], input="x")
        assert result.returncode == 2 and "is empty" in result.stderr, (args, result.stderr)


def test_no_tpm_is_worded_as_a_tpm(cli, store):
    result = run([cli, "hardware-id", "com.example.app"], env={"DEVICEID_TPM_TCTI": "device:/nonexistent/tpmrm0"})
    assert result.returncode == 15, result.stderr
    assert result.stderr.startswith("deviceid: TPM unavailable"), result.stderr


def test_python_words_no_tpm_as_a_tpm(store, monkeypatch):
    """The status table's TPM column: Python says "TPM unavailable", as the command does, not the
    store's "store unavailable" that deviceid_strerror() gives the status."""
    import deviceid

    monkeypatch.setenv("DEVICEID_TPM_TCTI", "device:/nonexistent/tpmrm0")
    for call in (lambda: deviceid.hardware_id("com.example.app"), lambda: deviceid.attest_enrolment("com.example.app"),
                 lambda: deviceid.Client().hardware_id("com.example.app")):
        with pytest.raises(deviceid.UnavailableError) as raised:
            call()
        assert str(raised.value).startswith("TPM unavailable: "), raised.value
        assert "/nonexistent/tpmrm0" in str(raised.value)
    assert deviceid.strerror(deviceid.UnavailableError.status) == "store unavailable"


def test_every_public_function_says_what_it_raises():
    import deviceid

    functions = [getattr(deviceid, name) for name in deviceid.__all__ if inspect.isfunction(getattr(deviceid, name))]
    assert len(functions) > 30
    silent = [f.__name__ for f in functions if "raise" not in (f.__doc__ or "").lower()]
    assert silent == [], f"docstrings that do not say what they raise: {silent}"


def test_every_client_method_and_coroutine_says_what_it_raises():
    import deviceid
    import deviceid.aio

    def public(cls):
        return [(f"{cls.__name__}.{name}", member.fget if isinstance(member, property) else member)
                for name, member in vars(cls).items() if not name.startswith("_")
                and (inspect.isfunction(member) or isinstance(member, property))]

    calls = public(deviceid.Client) + public(deviceid.aio.AsyncClient) + [
        (name, getattr(deviceid.aio, name)) for name in deviceid.aio.__all__
        if inspect.iscoroutinefunction(getattr(deviceid.aio, name))]
    assert len(calls) > 60
    quiet = {"Client.close", "AsyncClient.close"}  # they never raise
    silent = [name for name, f in calls if "raise" not in (f.__doc__ or "").lower() and name not in quiet]
    assert silent == [], f"docstrings that do not say what they raise: {silent}"
    # Every coroutine has a blocking form of the same name, and every Client method a coroutine twin.
    assert {name for name in deviceid.aio.__all__ if name != "AsyncClient"} <= set(deviceid.__all__)
    assert {n for n, m in vars(deviceid.Client).items() if inspect.isfunction(m) and not n.startswith("_")} - {
        "configure"} == {n for n, m in vars(deviceid.aio.AsyncClient).items()
                         if inspect.iscoroutinefunction(m) and not n.startswith("_")} | {"close"}


def test_the_ids_here_are_uuids(cli, tmp_path):
    """A control: the environment of these tests does give IDs."""
    result = run([cli, "get", "com.example.control"], env=no_keyring_env(tmp_path))
    assert re.fullmatch(UUID_V4_TEXT, result.stdout.strip()), result.stderr
    assert tool("DEVICEID_TEST_CLI") == cli


def test_building_the_wheel_without_swift_says_what_to_do(tmp_path):
    """0.3.0: a bare "swift: command not found" from make; and DEVICEID_WHEEL_LIBRARY alone, as its
    README said, still ran make build."""
    build = ["sh", "-c", f'cd "{ROOT}" && exec /usr/bin/python3 setup.py -q build_py --build-lib "{tmp_path}/lib"']
    no_swift = run(build, env={"PATH": "/usr/bin:/bin", "DEVICEID_WHEEL_LIBRARY": None, "DEVICEID_WHEEL_CLI": None})
    assert no_swift.returncode != 0
    for words in ("needs Swift 6", "DEVICEID_WHEEL_LIBRARY=", "DEVICEID_WHEEL_CLI=", "docs/INSTALL.md"):
        assert words in no_swift.stderr, (words, no_swift.stderr)
    half = run(build, env={"DEVICEID_WHEEL_LIBRARY": "/nonexistent/libdeviceid.so.2", "DEVICEID_WHEEL_CLI": None})
    assert half.returncode != 0 and "together" in half.stderr, half.stderr
