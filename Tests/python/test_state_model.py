"""The state model (docs/STATE.md): one regression test per way 0.2.0 broke its promise across
contexts (issue 16, cases 1-6), each against the real CLI, library and a private gnome-keyring.
Each of these fails on 0.2.0. Tests/model/ drives the same invariants with random sequences."""
import json
import os
import re
import subprocess

from conftest import ROOT, UUID_V4_TEXT, in_fresh_keyring, run

UUID = UUID_V4_TEXT
# A context without a session bus (ssh, cron): no address, and a runtime directory without a bus.
NO_BUS = 'env -u DBUS_SESSION_BUS_ADDRESS XDG_RUNTIME_DIR="$HOME/no-bus"'


def values(out, name):
    return re.findall(rf"^{name}=(.*)$", out, re.M)


def value(out, name):
    found = values(out, name)
    assert len(found) == 1, (name, out)
    return found[0]


# Case 1 -------------------------------------------------------------------------------------------

ROOT_CONTEXTS = """set -u
mount -t tmpfs -o mode=0755 none /var/lib
mount --bind "$1" /root  # root's home is the password database's, whatever $HOME says
export HOME=/root
cli=$2
service() { env -u XDG_RUNTIME_DIR -u DBUS_SESSION_BUS_ADDRESS -u XDG_DATA_HOME -u DEVICEID_STORE_DIR "$@"; }
login() { env -u DBUS_SESSION_BUS_ADDRESS -u XDG_DATA_HOME -u DEVICEID_STORE_DIR XDG_RUNTIME_DIR=$HOME/run "$@"; }
mkdir -p $HOME/run
echo "service=$(service $cli get com.example.root)"
echo "login=$(login $cli get com.example.root)"
echo "service-again=$(service $cli get com.example.root)"
echo "files=$(ls /var/lib/deviceid | grep -c '^id-')"
echo "home=$(ls $HOME/.local/share/deviceid 2>/dev/null | wc -l)"
"""


def test_case1_a_root_login_and_a_root_service_share_one_store(cli, tmp_path):
    home = tmp_path / "root-home"
    home.mkdir()
    script = tmp_path / "root.sh"
    script.write_text(ROOT_CONTEXTS)
    out = run(["unshare", "--mount", "--propagation", "private", "bash", str(script), str(home), cli]).stdout
    service = value(out, "service")
    assert re.fullmatch(UUID, service), out
    assert value(out, "login") == service, "an admin's login sees the service's ID, and mints nothing"
    assert value(out, "service-again") == service, "the service's ID did not change because an admin looked"
    assert value(out, "files") == "1" and value(out, "home") == "0", out


def test_case1_upgrade_roots_ids_kept_by_0_2_0_in_its_home_are_found_and_moved(cli, tmp_path):
    home = tmp_path / "root-home"
    legacy = home / ".local" / "share" / "deviceid"
    old = run([cli, "--backend", "file", "--store-dir", str(legacy), "get", "com.example.root"]).stdout.strip()
    assert re.fullmatch(UUID, old)
    script = tmp_path / "root.sh"
    script.write_text(ROOT_CONTEXTS)
    out = run(["unshare", "--mount", "--propagation", "private", "bash", str(script), str(home), cli]).stdout
    assert value(out, "service") == old and value(out, "login") == old and value(out, "service-again") == old, out
    assert value(out, "files") == "1", "copied into /var/lib/deviceid"


def test_case1_when_both_hold_one_the_machine_wide_store_wins(cli, tmp_path):
    """0.2.0 could leave A in /var/lib/deviceid (the service's) and B in root's home (an admin's
    login): the service's A stays, for the service and the admin alike."""
    home = tmp_path / "root-home"
    legacy = home / ".local" / "share" / "deviceid"
    run([cli, "--backend", "file", "--store-dir", str(legacy), "get", "com.example.root"])
    script = tmp_path / "root.sh"
    script.write_text(ROOT_CONTEXTS.replace(
        'echo "service=', f'{cli} --backend file --store-dir /var/lib/deviceid get com.example.root >$HOME/a\necho "a=$(cat $HOME/a)"\necho "service='))
    out = run(["unshare", "--mount", "--propagation", "private", "bash", str(script), str(home), cli]).stdout
    a = value(out, "a")
    assert value(out, "service") == a and value(out, "login") == a and value(out, "service-again") == a, out


# Case 2 -------------------------------------------------------------------------------------------

def test_case2_an_opt_out_that_cannot_reach_the_keyring_fails_and_one_that_can_holds_everywhere(cli):
    out = in_fresh_keyring(f"""
        {cli} get com.example.app >/dev/null
        {NO_BUS} {cli} --json advertising limit on >/dev/null 2>$HOME/err; echo "nobus-limit-rc=$?"
        echo "nobus-limit-err=$(cat $HOME/err)"
        echo "desktop=$({cli} --json advertising get)"
        {NO_BUS} {cli} openudid opt-out com.example.app on 2>/dev/null; echo "nobus-optout-rc=$?"
        {cli} openudid get com.example.app >/dev/null; echo "desktop-openudid-rc=$?"
        {cli} advertising limit on; echo "desktop-limit-rc=$?"
        echo "nobus=$({NO_BUS} {cli} --json advertising get)"
    """).stdout
    assert value(out, "nobus-limit-rc") == "15", out
    assert "keyring" in value(out, "nobus-limit-err") and "UNAVAILABLE" in value(out, "nobus-limit-err")
    desktop = json.loads(value(out, "desktop"))
    assert desktop["limited"] is False and desktop["id"] != "00000000-0000-0000-0000-000000000000"
    assert value(out, "nobus-optout-rc") == "15"
    assert value(out, "desktop-openudid-rc") == "0", "the refused opt-out changed nothing"
    assert value(out, "desktop-limit-rc") == "0"
    nobus = json.loads(value(out, "nobus"))
    assert nobus["limited"] is True and nobus["id"] == "00000000-0000-0000-0000-000000000000", \
        "the limit set in the session reaches the context without a bus through the mirror"


def test_case2_settings_from_two_data_directories_resolve_by_clock_not_by_which_store_answered(cli):
    out = in_fresh_keyring(f"""
        a() {{ XDG_DATA_HOME=$HOME/a "$@"; }}
        b() {{ XDG_DATA_HOME=$HOME/b "$@"; }}
        a {cli} advertising limit on
        echo "b-sees=$(b {cli} advertising limit)"
        b {cli} advertising limit off
        echo "a-sees=$(a {cli} advertising limit)"
        echo "a-nobus=$(a {NO_BUS} {cli} advertising limit)"
    """).stdout
    assert value(out, "b-sees") == "on", out
    assert value(out, "a-sees") == "off", "the later change wins, though A's mirror still said on"
    assert value(out, "a-nobus") == "off", "A's mirror received the later value when A read the keyring"


# Case 3 -------------------------------------------------------------------------------------------

def test_case3a_a_reset_that_cannot_reach_the_keyring_fails_and_changes_nothing(cli):
    out = in_fresh_keyring(f"""
        echo "before=$({cli} get com.example.app)"
        {NO_BUS} {cli} --json reset com.example.app 2>$HOME/err; echo "nobus-reset-rc=$?"
        echo "err=$(cat $HOME/err)"
        echo "after=$(DEVICEID_MIRROR_RECHECK_S=0 {cli} get com.example.app)"
    """).stdout
    assert value(out, "nobus-reset-rc") == "15", out
    assert '"UNAVAILABLE"' in value(out, "err") and "keyring" in value(out, "err")
    assert value(out, "after") == value(out, "before"), "nothing changed, and nothing claimed a reset"


def test_case3b_a_reset_through_one_data_directory_is_never_undone_by_another(cli):
    out = in_fresh_keyring(f"""
        a() {{ XDG_DATA_HOME=$HOME/a "$@"; }}
        b() {{ XDG_DATA_HOME=$HOME/b "$@"; }}
        echo "a0=$(a {cli} get com.example.app)"
        echo "b0=$(b {cli} get com.example.app)"
        sleep 1.1  # creation times in seconds: the new ID is younger, so 0.2.0's "older wins" picks the old
        a {cli} reset com.example.app
        echo "a1=$(a {cli} get com.example.app)"
        echo "b-mirror=$(b {cli} --json get com.example.app)"
        echo "b-recheck=$(b env DEVICEID_MIRROR_RECHECK_S=0 {cli} get com.example.app)"
        echo "keyring=$(secret-tool lookup service deviceid.app username com.example.app)"
        echo "a2=$(a env DEVICEID_MIRROR_RECHECK_S=0 {cli} get com.example.app)"
        echo "b2=$(b {cli} get com.example.app)"
    """).stdout
    a0, a1 = value(out, "a0"), value(out, "a1")
    assert value(out, "b0") == a0 and a1 != a0, out
    mirror = json.loads(value(out, "b-mirror"))
    assert mirror["id"] == a0 and mirror["mirrored"] is True, "bounded staleness: B's confirmed mirror, no D-Bus"
    assert value(out, "b-recheck") == a1, "B's re-check takes the keyring's ID"
    assert value(out, "keyring") == a1, "and never writes the old one back"
    assert value(out, "a2") == a1 and value(out, "b2") == a1, out


def test_case3c_a_secret_service_reset_also_kills_the_confirmed_mirror(cli):
    out = in_fresh_keyring(f"""
        echo "before=$({cli} get com.example.app)"
        {cli} --backend secret-service reset com.example.app; echo "reset-rc=$?"
        echo "mirror-first=$({cli} get com.example.app)"
        echo "recheck=$(DEVICEID_MIRROR_RECHECK_S=0 {cli} get com.example.app)"
        echo "keyring=$(secret-tool lookup service deviceid.app username com.example.app)"
    """).stdout
    before = value(out, "before")
    assert value(out, "reset-rc") == "0"
    assert value(out, "mirror-first") != before, "the default directory's mirror holds the tombstone"
    assert value(out, "recheck") == value(out, "mirror-first") == value(out, "keyring"), out


def test_case3_a_file_backend_reset_reaches_the_keyring_the_user_keeps_ids_in(cli):
    out = in_fresh_keyring(f"""
        echo "before=$({cli} get com.example.app)"
        {cli} --backend file reset com.example.app; echo "reset-rc=$?"
        echo "after=$(DEVICEID_MIRROR_RECHECK_S=0 {cli} get com.example.app)"
        {cli} get com.example.other >/dev/null
        {NO_BUS} {cli} --backend file reset com.example.other 2>/dev/null; echo "nobus-rc=$?"
    """).stdout
    assert value(out, "reset-rc") == "0" and value(out, "after") != value(out, "before"), out
    assert value(out, "nobus-rc") == "15", "the keyring the marker names must be reached"


# Case 4 -------------------------------------------------------------------------------------------

FORKED_CHILD_WITHOUT_LIBDBUS = r"""
import os, sys
import deviceid
deviceid.get("com.example.warm")          # GDBus has started in this process
pid = os.fork()
if pid == 0:
    try:
        print("child=" + deviceid.get("com.example.other"), flush=True)
    except deviceid.DeviceIDError as e:
        print("child-error=" + type(e).__name__ + ":" + str(e), flush=True)
    os._exit(0)
os.waitpid(pid, 0)
"""


def test_case4_a_forked_child_without_libdbus_does_not_mint_over_the_keyring(cli):
    libdbus = os.path.realpath("/lib/x86_64-linux-gnu/libdbus-1.so.3")
    assert os.path.exists(libdbus)
    out = in_fresh_keyring(f"""
        export DEVICEID_STORE_DIR=$HOME/store
        echo "keyring=$({cli} get com.example.other)"
        rm -rf $HOME/store
        cat >$HOME/child.py <<'EOF'
{FORKED_CHILD_WITHOUT_LIBDBUS}
EOF
        unshare --mount --propagation private sh -c "mount --bind /dev/null {libdbus} && python3 $HOME/child.py"
        echo "again=$({cli} get com.example.other)"
    """).stdout
    assert not values(out, "child"), "0.2.0 minted a new ID here: " + out
    assert "UnavailableError" in value(out, "child-error") and "libdbus" in value(out, "child-error"), out
    assert value(out, "again") == value(out, "keyring")


# Case 5 -------------------------------------------------------------------------------------------

def test_case5_arguments_that_are_not_utf8_are_refused(cli, store):
    for args in ([b"get", b"\xff"], [b"get", b"\xfe"], [b"--store-dir", b"/tmp/\xff", b"get", b"app"],
                 [b"--json", b"secret", b"lookup", b"svc", b"\xff"]):
        result = subprocess.run([cli.encode()] + args, capture_output=True, timeout=30)
        assert result.returncode == 2, (args, result)
        assert b"not valid UTF-8" in result.stderr and result.stdout == b""
    assert not any(store.iterdir()) if store.exists() else True, "nothing was written"


# Case 6 -------------------------------------------------------------------------------------------

def test_case6_no_bus_and_no_mirror_copy_refuses_where_the_user_keeps_a_keyring(cli):
    out = in_fresh_keyring(f"""
        echo "desktop=$({cli} get com.example.first)"
        {NO_BUS} {cli} --json get com.example.second 2>$HOME/err; echo "nobus-rc=$?"
        echo "err=$(cat $HOME/err)"
        echo "desktop2=$({cli} --json get com.example.second)"
        echo "nobus2=$({NO_BUS} {cli} get com.example.second)"
    """).stdout
    assert value(out, "nobus-rc") == "15", "0.2.0 minted a file-only ID here: " + out
    assert "keyring" in value(out, "err")
    desktop2 = json.loads(value(out, "desktop2"))
    assert desktop2["source"] == "created" and desktop2["provisional"] is False
    assert value(out, "nobus2") == desktop2["id"], "the context without a bus now answers from the mirror"


def test_case6_an_id_made_without_any_keyring_is_provisional_and_yields_to_the_keyrings(cli):
    out = in_fresh_keyring(f"""
        export XDG_DATA_HOME=$HOME/fresh
        echo "keyring=$(XDG_DATA_HOME=$HOME/other {cli} get com.example.app)"
        echo "nobus=$({NO_BUS} {cli} --json get com.example.app)"
        echo "nobus-file=$({NO_BUS} {cli} --backend file --json get com.example.app)"
        echo "desktop=$({cli} --json get com.example.app)"
        echo "nobus-after=$({NO_BUS} {cli} --json get com.example.app)"
    """).stdout
    nobus = json.loads(value(out, "nobus"))
    assert nobus["provisional"] is True and nobus["source"] == "created", out
    assert json.loads(value(out, "nobus-file"))["provisional"] is False, "the file backend is a choice: final"
    desktop = json.loads(value(out, "desktop"))
    assert desktop["id"] == value(out, "keyring") and desktop["provisional"] is False, \
        "the keyring's ID wins over the provisional one"
    after = json.loads(value(out, "nobus-after"))
    assert after["id"] == value(out, "keyring") and after["provisional"] is False


def test_a_keyring_that_appears_after_a_provisional_id_receives_it(cli):
    out = in_fresh_keyring(f"""
        echo "nobus=$({NO_BUS} {cli} get com.example.app)"
        echo "desktop=$({cli} --json get com.example.app)"
        echo "keyring=$(secret-tool lookup service deviceid.app username com.example.app)"
    """).stdout
    desktop = json.loads(value(out, "desktop"))
    assert desktop["id"] == value(out, "nobus") == value(out, "keyring"), out
    assert desktop["provisional"] is False


# Upgrade ------------------------------------------------------------------------------------------

def test_upgrade_a_0_2_0_mirror_with_confirmed_records_counts_as_a_keyring_marker(cli):
    """0.2.0 wrote no marker; a record it confirmed says the user keeps IDs in a keyring."""
    out = in_fresh_keyring(f"""
        export DEVICEID_STORE_DIR=$HOME/store
        echo "id=$({cli} get com.example.app)"
        rm -f $HOME/store/state-*
        {NO_BUS} {cli} get com.example.new 2>/dev/null; echo "nobus-rc=$?"
    """).stdout
    assert value(out, "nobus-rc") == "15", out


def test_upgrade_keyring_items_and_mirror_records_without_generations_keep_their_ids(cli):
    out = in_fresh_keyring(f"""
        export DEVICEID_STORE_DIR=$HOME/store
        id=6f2c1a34-9b7e-4c1d-8e2f-0a1b2c3d4e5f
        printf %s $id | secret-tool store --label=old service deviceid.app username com.example.old deviceid-created 1700000000
        echo "get=$(DEVICEID_MIRROR_RECHECK_S=0 {cli} get com.example.old)"
        echo "again=$(DEVICEID_MIRROR_RECHECK_S=0 {cli} get com.example.old)"
        {cli} reset com.example.old
        echo "new=$({cli} get com.example.old)"
        echo "attrs=$(secret-tool search --all service deviceid.app username com.example.old 2>&1 | grep -c 'deviceid-generation = 1')"
    """).stdout
    assert value(out, "get") == "6f2c1a34-9b7e-4c1d-8e2f-0a1b2c3d4e5f" == value(out, "again"), out
    assert value(out, "new") != value(out, "get") and value(out, "attrs") == "1", out


def test_first_runs_through_two_directories_at_once_mint_one_id(cli):
    """Two data directories take two directory locks; the user's session lock makes their first
    runs against one keyring mint one ID (docs/STATE.md, "Known limits")."""
    out = in_fresh_keyring(f"""
        for round in 1 2 3; do
            app=com.example.race$round
            for i in 1 2 3 4 5 6; do
                d=a; [ $((i % 2)) = 0 ] && d=b
                (echo "$round $(XDG_DATA_HOME=$HOME/$d DEVICEID_MIRROR_RECHECK_S=0 {cli} get $app)") &
            done
            wait
            echo "$round $(XDG_DATA_HOME=$HOME/a DEVICEID_MIRROR_RECHECK_S=0 {cli} get $app)"
            echo "$round $(XDG_DATA_HOME=$HOME/b DEVICEID_MIRROR_RECHECK_S=0 {cli} get $app)"
        done
        echo "locks=$(ls $XDG_RUNTIME_DIR | grep -c '^deviceid.lock$')"
    """).stdout
    for round in "123":
        answers = {line.split()[1] for line in out.splitlines() if line.startswith(round + " ")}
        assert len(answers) == 1 and re.fullmatch(UUID, answers.pop()), out
    assert value(out, "locks") == "1"


def test_upgrade_roots_opt_outs_kept_by_0_2_0_in_its_home_still_hold(cli, tmp_path):
    home = tmp_path / "root-home"
    legacy = home / ".local" / "share" / "deviceid"
    assert run([cli, "--backend", "file", "--store-dir", str(legacy), "advertising", "limit", "on"]).returncode == 0
    script = tmp_path / "root.sh"
    script.write_text(ROOT_CONTEXTS + 'echo "limit=$(service $cli advertising limit)"\n'
                      'echo "limit-login=$(login $cli advertising limit)"\n')
    out = run(["unshare", "--mount", "--propagation", "private", "bash", str(script), str(home), cli]).stdout
    assert value(out, "limit") == "on" and value(out, "limit-login") == "on", out


def test_generations_and_clocks_that_would_overflow_are_corrupt_not_a_crash(cli):
    big = "18446744073709551615"
    out = in_fresh_keyring(f"""
        echo "id=$({cli} get com.example.app)"
        printf '' | secret-tool store --label=x service deviceid.app username com.example.app deviceid-reset {big}
        {cli} reset com.example.app >/dev/null 2>&1; echo "reset-rc=$?"
        printf 'on\\nclock={big}\\n' | secret-tool store --label=x service deviceid.setting username advertising.limit-tracking
        {cli} advertising limit off >/dev/null 2>&1; echo "limit-rc=$?"
        echo "limit=$({cli} advertising limit)"
    """).stdout
    assert value(out, "reset-rc") == "0", "the unreadable tombstone is replaced by a sound one: " + out
    assert value(out, "limit-rc") == "0" and value(out, "limit") == "off", out
