"""Sandboxes and containers (issue 18): what the deviceid command answers, and says about where its
ID lives, inside a Flatpak-style sandbox with and without the Secret portal
(scripts/with-flatpak-sandbox) and inside simulated Docker, Podman and systemd-nspawn containers
(scripts/with-container), and on this machine itself.

Each sandbox or container start runs one driver (DRIVER, in the sandbox's /usr/bin/python3) that
performs several steps and prints every step's exit status, output and parsed JSON as one JSON
object, so the whole file starts about twenty sandboxes and runs in a few seconds. The CLI is
reached through a read-only bind of its install prefix at the same path (it has RUNPATH $ORIGIN
and links no libdeviceid: nothing else of the prefix is needed).

The contract (deviceid --json):
  get APP     "location": keyring | portal | app-data | host | container | volume | bind-mount | undetermined,
              "app_data_only": bool, and "source" "portal" for a portal-derived ID
  doctor      "environment": {kind, name, portal: {state, detail}, machine_id: {weak, detail},
              store: {path, location}, stable_id: {location, survives_app_data_removal,
              survives_container_removal}}
  machine-id app-specific APP   "weak": bool, "weak_reason" exactly when weak
Tools missing fail the tests (scripts/install-deps installs them); they never skip."""
import json
import os
import pathlib
import re
import secrets
import shutil
import subprocess

import pytest

from conftest import ROOT, UUID_V4, run

FLATPAK = str(ROOT / "scripts" / "with-flatpak-sandbox")
CONTAINER = str(ROOT / "scripts" / "with-container")
APP = "org.example.Sandboxed"          # the Flatpak app id of the sandbox
OTHER_FLATPAK = "org.example.Neighbour"  # a second sandboxed app, same user and keyring
ID_NAME = "com.example.sandboxed"      # the APP_ID passed to deviceid get
OTHER_NAME = "com.example.other"
APP128 = "0123456789abcdef0123456789abcdef"  # an app ID for machine-id app-specific / systemd-id128
IMAGE_MACHINE_ID = "5eed0123456789abcdef0123456789ab"
FRESH_MACHINE_ID = "f00dfeedf00dfeedf00dfeedf00dfeed"
LOCATIONS = {"keyring", "portal", "app-data", "host", "container", "volume", "bind-mount", "undetermined"}
NEEDED_TOOLS = ["bwrap", "xdg-dbus-proxy", "/usr/libexec/xdg-desktop-portal", "gnome-keyring-daemon",
                "dbus-run-session", "gdbus", "unshare", "mount", "systemd-id128", "systemd-detect-virt",
                "/usr/bin/python3"]


def _status(name):
    """DEVICEID_E_NAME's value, from include/deviceid.h."""
    header = (ROOT / "include" / "deviceid.h").read_text()
    m = re.search(rf"#define DEVICEID_E_{name}\s+\((-\d+)\)", header)
    assert m, f"DEVICEID_E_{name} is not in include/deviceid.h"
    return int(m.group(1))


def _exit_code(name):
    """The CLI's exit status for a status (docs/cli-json.schema.json: 1 for NOT_FOUND, else 10 - status)."""
    return 1 if name == "NOT_FOUND" else 10 - _status(name)


# Runs in the sandbox: argv[1] is a JSON list of steps {"tag", "argv", "input"?}; "CLI" in argv is
# the command. Prints {tag: {rc, out, err, json, error, ms}} ("json" parses stdout, "error" stderr,
# "ms" the step's wall-clock time).
DRIVER = r"""
import json, os, subprocess, sys, time
cli = os.environ["DEVICEID_TEST_CLI"]
results = {}
for step in json.loads(sys.argv[1]):
    argv = [cli if a == "CLI" else a for a in step["argv"]]
    started = time.monotonic()
    try:
        p = subprocess.run(argv, input=step.get("input", ""), capture_output=True, text=True, timeout=60)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except Exception as e:  # noqa: BLE001 (report, do not stop the other steps)
        rc, out, err = -1, "", repr(e)
    entry = {"rc": rc, "out": out, "err": err, "json": None, "error": None,
             "ms": round((time.monotonic() - started) * 1000)}
    for key, text in (("json", out), ("error", err)):
        try:
            entry[key] = json.loads(text.strip().splitlines()[-1]) if text.strip() else None
        except ValueError:
            pass
    results[step["tag"]] = entry
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def cli():
    value = os.environ.get("DEVICEID_TEST_CLI")
    assert value, "DEVICEID_TEST_CLI is not set: run the suite through scripts/test"
    missing = [t for t in NEEDED_TOOLS if not (shutil.which(t) or os.access(t, os.X_OK))]
    assert not missing, f"missing {', '.join(missing)}: run scripts/install-deps"
    assert os.getuid() == 0, "the sandbox and container tests run as root (scripts/test does)"
    return str(pathlib.Path(value).resolve())


def prefix_of(cli):
    return str(pathlib.Path(cli).parents[1])


def drive(wrapper, steps, env, timeout=120):
    """Starts wrapper once and runs the steps inside; returns {tag: result}."""
    merged = dict({"DEVICEID_STORE_DIR": None, "DEVICEID_BACKEND": None, "DEVICEID_MACHINE_ID_PATH": None}, **env)
    proc = run(wrapper + ["/usr/bin/python3", "-c", DRIVER, json.dumps(steps)], env=merged, timeout=timeout)
    assert proc.returncode == 0, f"{wrapper[0]} failed ({proc.returncode}): {proc.stderr[-2000:]}"
    lines = proc.stdout.strip().splitlines()
    assert lines, f"no output from the driver: {proc.stderr[-2000:]}"
    return json.loads(lines[-1])


def in_flatpak(cli, app, steps, fp_home, portal=True, secrets_backend=True, portal_command=None, host_hook=None):
    """portal_command: a fake portal (Tests/fakes/fake-secret-portal) in place of xdg-desktop-portal;
    host_hook: a command run on the sandbox's bus, outside it, before the steps."""
    env = {"DEVICEID_TEST_CLI": cli, "FP_HOME": str(fp_home), "FP_BIND": f"{prefix_of(cli)}:{prefix_of(cli)}",
           "FP_PORTAL": "1" if portal else "0", "FP_SECRETS": "1" if secrets_backend else "0",
           "FP_PORTAL_COMMAND": portal_command, "FP_HOST_HOOK": host_hook}
    return drive([FLATPAK, app], steps, env)


def in_container(cli, steps, **ct):
    env = {"DEVICEID_TEST_CLI": cli, "CT_BIND": f"{prefix_of(cli)}:{prefix_of(cli)}"}
    env.update({key: str(value) for key, value in ct.items()})
    return drive([CONTAINER], steps, env)


def answer(results, tag):
    """The JSON answer of a step that must have succeeded."""
    r = results[tag]
    assert r["rc"] == 0 and isinstance(r["json"], dict), f"{tag}: exit {r['rc']}: {r['err'][-1500:]} {r['out'][-500:]}"
    return r["json"]


def step(tag, *args, input=""):
    return {"tag": tag, "argv": ["CLI", "--json", *args], "input": input}


def assert_identifier(a, *, source=None, location=None):
    assert UUID_V4.match(a["id"]), a
    assert a.get("location") in LOCATIONS, f"no valid location in {a}"
    for flag in ("device_changed", "weak", "limited", "file_only", "repaired", "mirrored", "provisional",
                 "app_data_only", "anchor_changed"):
        assert isinstance(a.get(flag), bool), f"{flag} is not a boolean in {a}"
    if source is not None:
        assert a["source"] == source, a
    if location is not None:
        assert a["location"] == location, a


def environment(doctor):
    env = doctor.get("environment")
    assert isinstance(env, dict), f"doctor --json has no environment object: {doctor}"
    assert env.get("kind") in ("host", "flatpak", "snap", "container"), env
    assert isinstance(env.get("name"), str), env
    assert env.get("portal", {}).get("state") in ("secret", "absent", "failed", "not-asked"), env
    assert isinstance(env["portal"].get("detail"), str), env
    machine_id = env.get("machine_id", {})
    assert isinstance(machine_id.get("weak"), bool) and isinstance(machine_id.get("detail"), str), env
    assert isinstance(env.get("store", {}).get("path"), str) and env["store"].get("location") in LOCATIONS, env
    stable = env.get("stable_id", {})
    assert stable.get("location") in LOCATIONS, env
    assert isinstance(stable.get("survives_app_data_removal"), bool), env
    assert isinstance(stable.get("survives_container_removal"), bool), env
    return env


def files_under(path):
    for dirpath, _, names in os.walk(path):
        for name in names:
            p = os.path.join(dirpath, name)
            if os.path.isfile(p) and not os.path.islink(p):
                yield p


# ---------------------------------------------------------------------------------------------
# A Flatpak with the Secret portal: the ID is derived from the portal's per-app secret, which the
# host's keyring keeps (gnome-keyring's login collection, in FP_HOME outside ~/.var/app).

# Reads this sandboxed app's secret from the Secret portal as libsecret does (RetrieveSecret with
# a pipe, 64 bytes) and prints it in hex: the known answer the derivation is checked against.
PORTAL_SECRET = r"""
import dbus, os
portal = dbus.SessionBus().get_object("org.freedesktop.portal.Desktop", "/org/freedesktop/portal/desktop")
r, w = os.pipe()
portal.RetrieveSecret(dbus.types.UnixFd(w), dbus.Dictionary({}, signature="sv"),
                      dbus_interface="org.freedesktop.portal.Secret")
os.close(w)
data = b""
while len(data) < 64:
    chunk = os.read(r, 64 - len(data))
    if not chunk:
        break
    data += chunk
print(data.hex())
"""


def derived_id(secret_hex, app_id):
    """docs/ENVIRONMENTS.md "Sandboxes and containers": HMAC-SHA256(HMAC-SHA256(S, label), app id), first 16
    bytes, made a version-4 UUID (RFC 9562), as systemd's app-specific derivation."""
    import hashlib
    import hmac
    key = hmac.new(bytes.fromhex(secret_hex), b"deviceid.portal.stable-id.v1", hashlib.sha256).digest()
    raw = bytearray(hmac.new(key, app_id.encode(), hashlib.sha256).digest()[:16])
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


@pytest.fixture(scope="module")
def portal_runs(cli, tmp_path_factory):
    home = tmp_path_factory.mktemp("flatpak-home")
    secret = "portal-" + secrets.token_hex(16)
    first = in_flatpak(cli, APP, [
        step("get", "get", ID_NAME), step("again", "get", ID_NAME), step("other", "get", OTHER_NAME),
        step("doctor", "doctor"), step("reset", "reset", ID_NAME), step("after-reset", "get", ID_NAME),
        step("store", "secret", "store", "svc.sandboxed", "acct", input=secret),
        step("lookup", "secret", "lookup", "svc.sandboxed", "acct"),
        {"tag": "portal-secret", "argv": ["/usr/bin/python3", "-c", PORTAL_SECRET]},
    ], home)
    files_after_first = {p: pathlib.Path(p).read_bytes() for p in files_under(home)}
    shutil.rmtree(home / ".var" / "app" / APP)   # flatpak uninstall --delete-data
    second = in_flatpak(cli, APP, [step("get", "get", ID_NAME), step("doctor", "doctor")], home)
    neighbour = in_flatpak(cli, OTHER_FLATPAK, [step("get", "get", ID_NAME)], home)
    return {"home": home, "secret": secret, "files": files_after_first, "first": first, "second": second,
            "neighbour": neighbour}


def test_flatpak_id_comes_from_the_portal(portal_runs):
    first = portal_runs["first"]
    a = answer(first, "get")
    assert_identifier(a, source="portal", location="portal")
    assert a["app_data_only"] is False and a["app_id"] == ID_NAME
    again = answer(first, "again")
    assert_identifier(again, source="portal", location="portal")
    assert again["id"] == a["id"], "the same ID on the next call"
    other = answer(first, "other")
    assert_identifier(other, source="portal", location="portal")
    assert other["id"] != a["id"], "another APP_ID of the same sandboxed app has another ID"


def test_flatpak_id_is_the_documented_derivation_of_the_portal_secret(portal_runs):
    first = portal_runs["first"]
    probe = first["portal-secret"]
    assert probe["rc"] == 0 and len(probe["out"].strip()) == 128, probe
    secret_hex = probe["out"].strip()
    assert answer(first, "get")["id"] == derived_id(secret_hex, ID_NAME)
    assert answer(first, "other")["id"] == derived_id(secret_hex, OTHER_NAME)


def test_flatpak_portal_id_survives_removal_of_the_app_data(portal_runs):
    a = answer(portal_runs["first"], "get")
    after = answer(portal_runs["second"], "get")
    assert_identifier(after, source="portal", location="portal")
    assert after["id"] == a["id"], "rm -rf ~/.var/app/APP_ID must not change a portal-derived ID"


def test_flatpak_another_sandboxed_app_gets_another_id(portal_runs):
    a = answer(portal_runs["first"], "get")
    theirs = answer(portal_runs["neighbour"], "get")
    assert_identifier(theirs, source="portal", location="portal")
    assert theirs["id"] != a["id"], "the portal's secret is per Flatpak app id: another app, another ID"


def test_flatpak_reset_of_a_portal_derived_id_is_unsupported(portal_runs):
    first = portal_runs["first"]
    reset = first["reset"]
    assert reset["rc"] == _exit_code("UNSUPPORTED"), reset
    error = (reset["error"] or {}).get("error", {})
    assert error.get("status") == _status("UNSUPPORTED") and error.get("name") == "UNSUPPORTED", reset
    assert isinstance(error.get("message"), str) and error["message"], reset
    assert answer(first, "after-reset")["id"] == answer(first, "get")["id"], "a refused reset changes nothing"


def test_flatpak_doctor_reports_the_portal(portal_runs):
    for run_name in ("first", "second"):
        env = environment(answer(portal_runs[run_name], "doctor"))
        assert (env["kind"], env["name"]) == ("flatpak", APP), env
        assert env["portal"]["state"] == "secret", env
        assert env["stable_id"]["location"] == "portal", env
        assert env["stable_id"]["survives_app_data_removal"] is True, env
        assert env["store"]["location"] == "app-data", env
        assert env["store"]["path"].startswith(str(portal_runs["home"] / ".var" / "app" / APP)), env


def test_flatpak_secret_round_trips_and_is_not_on_disk_in_plaintext(portal_runs):
    first = portal_runs["first"]
    assert first["store"]["rc"] == 0, first["store"]
    lookup = first["lookup"]
    assert lookup["rc"] == 0, lookup
    assert portal_runs["secret"] in lookup["out"], lookup
    needle = portal_runs["secret"].encode()
    plain = [p for p, data in portal_runs["files"].items() if needle in data]
    assert not plain, f"the secret is on disk in plaintext: {plain}"


# ---------------------------------------------------------------------------------------------
# A Flatpak without a portal (FP_PORTAL=0), or with a portal but no Secret back end
# (FP_SECRETS=0): the ID lives in the app's own data and goes with it.

def test_flatpak_without_the_secret_portal_falls_back_to_app_data(cli, tmp_path):
    """No portal on the bus (positively none): the app's files keep the ID, flagged provisional and
    app_data_only; removing the app's data removes it (the documented fallback)."""
    first = in_flatpak(cli, APP, [step("get", "get", ID_NAME), step("again", "get", ID_NAME),
                                  step("doctor", "doctor")], tmp_path, portal=False)
    a = answer(first, "get")
    assert_identifier(a, source="created", location="app-data")
    assert (a["app_data_only"], a["provisional"]) == (True, True), a
    again = answer(first, "again")
    assert_identifier(again, source="file", location="app-data")
    assert again["id"] == a["id"]
    env = environment(answer(first, "doctor"))
    assert (env["kind"], env["name"]) == ("flatpak", APP), env
    assert env["portal"]["state"] == "absent", env
    assert env["stable_id"]["location"] == "app-data", env
    assert env["stable_id"]["survives_app_data_removal"] is False, env
    shutil.rmtree(tmp_path / ".var" / "app" / APP)
    second = in_flatpak(cli, APP, [step("get", "get", ID_NAME)], tmp_path, portal=False)
    after = answer(second, "get")
    assert_identifier(after, source="created", location="app-data")
    assert after["id"] != a["id"], "without the portal the ID goes with the app's data (documented fallback)"


def test_flatpak_a_portal_whose_back_end_fails_mints_nothing(cli, tmp_path):
    """The portal is there but its back end gives nothing (gnome-keyring not running: Response 2,
    no bytes) — as a locked keyring on the host would: never a reason to mint. doctor says failed."""
    run1 = in_flatpak(cli, APP, [step("get", "get", ID_NAME), step("doctor", "doctor")], tmp_path,
                      secrets_backend=False)
    assert run1["get"]["rc"] != 0 and run1["get"]["error"]["error"]["name"] in ("UNAVAILABLE", "KEYRING"), run1["get"]
    assert not any(os.path.basename(f).startswith("id-") for f in files_under(tmp_path / ".var" / "app" / APP)), \
        "nothing minted into the app's files"
    doctor = run1["doctor"]
    assert doctor["rc"] == _exit_code("UNAVAILABLE"), doctor
    env = environment(doctor["json"])
    assert env["portal"]["state"] == "failed", env


def test_flatpak_this_device_only_never_uses_the_portal_and_without_a_tpm_refuses(cli, tmp_path, monkeypatch):
    """docs/STATE.md "Protection classes", "Sandboxes and services": the portal's secret lives in
    the host's login keyring, which a copied home carries, so this-device-only neither derives the
    ID from it nor seals secrets with it; the sandbox has no /dev/tpmrm0, so a get that would mint
    or seal in place, and a secret store, fail UNAVAILABLE in words naming the sandbox and the way
    to a TPM, and write nothing. The portable class keeps the portal's derived ID."""
    monkeypatch.delenv("DEVICEID_TPM_TCTI", raising=False)  # the default, device:/dev/tpmrm0
    tdo = ("--protection", "this-device-only")
    first = in_flatpak(cli, APP, [
        step("get", *tdo, "get", ID_NAME),
        step("store", *tdo, "secret", "store", "svc.tdo", "acct", input="tdo-secret"),
        step("doctor", *tdo, "doctor"),
    ], tmp_path)
    for tag in ("get", "store"):
        r = first[tag]
        error = (r["error"] or {}).get("error", {})
        assert r["rc"] == _exit_code("UNAVAILABLE") and error.get("name") == "UNAVAILABLE", r
        assert f"no TPM in this Flatpak sandbox ({APP})" in error["message"], error
        assert "--device=all" in error["message"], error
    app_files = list(files_under(tmp_path / ".var" / "app" / APP))
    assert not any(os.path.basename(f).startswith("id-") for f in app_files), "nothing minted into the app's files"
    assert not any(b"tdo-secret" in pathlib.Path(f).read_bytes() or "svc.tdo" in f for f in app_files), app_files
    env = environment(first["doctor"]["json"])
    protection = env["protection"]
    assert (protection["class"], protection["binding"]) == ("this-device-only", "refused"), protection
    assert "--device=all" in protection["detail"], protection
    # The portable class: the portal's derived ID, mirrored in the app's files; this-device-only
    # then would seal that mirror in place, and with no TPM refuses rather than answer it.
    second = in_flatpak(cli, APP, [step("portable", "get", ID_NAME), step("tdo", *tdo, "get", ID_NAME)], tmp_path)
    assert_identifier(answer(second, "portable"), source="portal", location="portal")
    tdo_get = second["tdo"]
    assert tdo_get["rc"] == _exit_code("UNAVAILABLE") and answer(second, "portable")["id"] not in tdo_get["out"], tdo_get


def test_flatpak_the_derived_id_outlives_a_silent_portal_and_a_provisional_one_yields(cli, tmp_path):
    """docs/STATE.md "In a sandbox": the derived ID's mirror answers while the portal is absent or
    failing (never a second ID), a reset of it is refused there too; an ID minted while no portal
    answered is provisional and the derived one replaces it when the portal answers."""
    derived = answer(in_flatpak(cli, APP, [step("get", "get", ID_NAME)], tmp_path), "get")
    silent = in_flatpak(cli, APP, [step("get", "get", ID_NAME), step("reset", "reset", ID_NAME)], tmp_path,
                        portal=False)
    mirrored = answer(silent, "get")
    assert (mirrored["id"], mirrored["source"], mirrored["location"], mirrored["mirrored"]) == \
        (derived["id"], "portal", "portal", True), mirrored
    assert silent["reset"]["rc"] == _exit_code("UNSUPPORTED"), silent["reset"]
    failing = answer(in_flatpak(cli, APP, [step("get", "get", ID_NAME)], tmp_path, secrets_backend=False), "get")
    assert failing["id"] == derived["id"], failing
    # A fresh app data without a portal: a provisional ID, which the portal's replaces for good.
    other = tmp_path / "other-home"
    other.mkdir()
    provisional = answer(in_flatpak(cli, APP, [step("get", "get", OTHER_NAME)], other, portal=False), "get")
    assert (provisional["provisional"], provisional["app_data_only"]) == (True, True), provisional
    later = in_flatpak(cli, APP, [step("get", "get", OTHER_NAME), step("again", "get", OTHER_NAME)], other)
    replaced = answer(later, "get")
    assert replaced["source"] == "portal" and replaced["id"] != provisional["id"], (provisional, replaced)
    assert answer(later, "again")["id"] == replaced["id"]
    back = answer(in_flatpak(cli, APP, [step("get", "get", OTHER_NAME)], other, portal=False), "get")
    assert back["id"] == replaced["id"], "the portal's ID stays when the portal is gone again"


# ---------------------------------------------------------------------------------------------
# This machine, outside any sandbox (the suite's own scripts/with-keyring session).

SYSTEMD_CONTAINER_NAMES = {"docker": "docker", "podman": "podman", "systemd-nspawn": "systemd-nspawn",
                           "lxc": "lxc", "lxc-libvirt": "lxc", "openvz": "openvz", "wsl": "wsl", "proot": "proot",
                           "rkt": "rkt", "container-other": "container-other"}


def in_first_pid_namespace():
    """The kernel's first PID namespace has the inode PROC_PID_INIT_INO (linux/proc_ns.h); without
    the link nothing can be told, and DeviceID takes it for the first."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino == 0xEFFFFFFC
    except FileNotFoundError:
        return True


def root_is_an_image():
    """Whether the last mount at "/" in /proc/self/mountinfo is an overlay with a writable layer."""
    image = False
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] == "/":
                dash = fields.index("-", 6)
                image = fields[dash + 1] == "overlay" and "upperdir=" in fields[dash + 3]
    return image


def in_own_cgroup_namespace():
    with open("/proc/self/cgroup") as f:
        return all(line.rstrip("\n").endswith(":/") for line in f)


def has_container_marker():
    """What systemd-detect-virt --container looks for before the PID namespace (systemd's virt.c)."""
    try:
        with open("/proc/1/environ", "rb") as f:
            pid1 = any(e.startswith(b"container=") for e in f.read().split(b"\0"))
    except OSError:
        pid1 = False
    return pid1 or any(os.path.exists(p) for p in ("/run/systemd/container", "/.dockerenv", "/run/.containerenv"))


def test_host_environment_matches_systemd_detect_virt(cli, keyring, store):
    """DeviceID says what systemd-detect-virt -c says, but for one rule of systemd 256 and later: a
    PID namespace without a manager's marker is a container only with a cgroup namespace of its
    own over an image's layers (docs/ENVIRONMENTS.md "Containers")."""
    virt = subprocess.run(["systemd-detect-virt", "-c"], capture_output=True, text=True).stdout.strip()
    if not has_container_marker() and not in_first_pid_namespace():
        virt = "container-other" if in_own_cgroup_namespace() and root_is_an_image() else "none"
    doctor = run([cli, "--json", "doctor"])
    env = environment(json.loads(doctor.stdout))
    if virt == "none":
        assert (env["kind"], env["name"]) == ("host", ""), env
    else:  # e.g. this test machine is itself a Docker container (/.dockerenv)
        assert (env["kind"], env["name"]) == ("container", SYSTEMD_CONTAINER_NAMES.get(virt, virt)), (virt, env)
    assert env["portal"]["state"] == "not-asked", "a host app is app id \"\" to the portal: one secret for all"
    got = run([cli, "--json", "get", "com.example.host"])
    assert got.returncode == 0, got.stderr
    assert_identifier(json.loads(got.stdout), location="keyring")


def test_python_and_c_report_what_doctor_reports(cli, keyring, store):
    """deviceid.environment() (the C functions deviceid_environment_*) and StableID.location give
    the same fields as doctor --json, in the same process environment."""
    import deviceid

    env = environment(json.loads(run([cli, "--json", "doctor"]).stdout))
    mine = deviceid.environment()
    assert (mine.kind, mine.name, mine.portal) == (env["kind"], env["name"], env["portal"]["state"])
    assert (mine.machine_id_weak, mine.machine_id_detail) == (env["machine_id"]["weak"], env["machine_id"]["detail"])
    assert (mine.store_path, mine.store_location) == (env["store"]["path"], env["store"]["location"])
    assert (mine.stable_id_location, mine.survives_app_data_removal, mine.survives_container_removal) == \
        (env["stable_id"]["location"], env["stable_id"]["survives_app_data_removal"],
         env["stable_id"]["survives_container_removal"])
    info = deviceid.get_info("com.example.python-location")
    from_cli = json.loads(run([cli, "--json", "get", "com.example.python-location"]).stdout)
    assert (info.id, info.location, info.app_data_only) == (from_cli["id"], from_cli["location"], False)


def test_snap_is_detected_and_its_data_is_app_data(cli, tmp_path):
    """A snap's command (SNAP_NAME; HOME and the store under SNAP_USER_DATA): with the Secret Service
    reachable (the password-manager-service plug) the keyring keeps the ID; with no bus, no portal:
    kind snap, the ID kept in the snap's data and flagged so. (snapd does not run here: the
    portal's answer to a real snap is not measured; docs/ENVIRONMENTS.md "Sandboxes and containers".)"""
    data = tmp_path / "snap" / "example-snap" / "x1"
    env = {"SNAP_NAME": "example-snap", "SNAP": "/snap/example-snap/x1", "SNAP_USER_DATA": str(data),
           "SNAP_USER_COMMON": str(tmp_path / "snap" / "example-snap" / "common"), "HOME": str(data),
           "XDG_DATA_HOME": str(data / ".local" / "share"), "DEVICEID_STORE_DIR": ""}
    # With the Secret Service on its bus (password-manager-service connected) and no portal there:
    # the keyring keeps the ID, as on a host.
    plugged_data = tmp_path / "plugged"
    plugged = run([cli, "--json", "get", "com.example.plugged"],
                  env=dict(env, SNAP_USER_DATA=str(plugged_data), HOME=str(plugged_data),
                           XDG_DATA_HOME=str(plugged_data / ".local" / "share")))
    assert plugged.returncode == 0, plugged.stderr
    assert (json.loads(plugged.stdout)["location"], json.loads(plugged.stdout)["app_data_only"]) == ("keyring", False)
    # No bus at all: no portal, no keyring; the snap's own data.
    env.update({"DBUS_SESSION_BUS_ADDRESS": None, "XDG_RUNTIME_DIR": None})
    doctor = json.loads(run([cli, "--json", "doctor"], env=env).stdout)["environment"]
    assert (doctor["kind"], doctor["name"]) == ("snap", "example-snap"), doctor
    assert doctor["portal"]["state"] == "absent", doctor
    assert doctor["store"]["path"].startswith(str(data)) and doctor["store"]["location"] == "app-data", doctor
    assert (doctor["stable_id"]["location"], doctor["stable_id"]["survives_app_data_removal"]) == ("app-data", False)
    got = run([cli, "--json", "get", "com.example.snapped"], env=env)
    assert got.returncode == 0, got.stderr
    answer = json.loads(got.stdout)
    assert (answer["location"], answer["app_data_only"], answer["source"]) == ("app-data", True, "created"), answer
    assert "removing the app's data removes it" in got.stderr
    # A classic snap's SNAP_NAME inherited by a program run from it (HOME is the user's): a host.
    inherited = dict(env, HOME=str(tmp_path / "home"))
    kind = json.loads(run([cli, "--json", "doctor"], env=inherited).stdout)["environment"]["kind"]
    assert kind in ("host", "container"), kind


# ---------------------------------------------------------------------------------------------
# Containers (scripts/with-container): root, no bus, the file store at /var/lib/deviceid.

CONTAINER_LOCATION = {"root": "container", "tmpfs": "container", "volume": "volume", "bind": "bind-mount"}


@pytest.mark.parametrize("store_kind", sorted(CONTAINER_LOCATION))
def test_container_store_location_and_what_survives_docker_rm(cli, tmp_path, store_kind):
    location = CONTAINER_LOCATION[store_kind]
    steps = [step("get", "get", ID_NAME), step("again", "get", ID_NAME), step("doctor", "doctor")]
    first = in_container(cli, steps, CT_KIND="docker", CT_STORE=store_kind, CT_STATE=tmp_path)
    a = answer(first, "get")
    assert_identifier(a, source="created", location=location)
    assert a["weak"] is True, "an image-baked machine ID cannot tell two containers of one image apart"
    assert answer(first, "again")["id"] == a["id"]
    env = environment(answer(first, "doctor"))
    assert (env["kind"], env["name"]) == ("container", "docker"), env
    assert env["machine_id"]["weak"] is True, env
    assert env["store"]["location"] == location and env["store"]["path"].startswith("/var/lib/deviceid"), env
    assert env["stable_id"]["location"] == location, env
    survives = location in ("volume", "bind-mount")
    assert env["stable_id"]["survives_container_removal"] is survives, env
    # docker rm, then docker run with the same volume or bind mount: a new writable layer and tmpfs
    second = in_container(cli, [step("get", "get", ID_NAME)], CT_KIND="docker", CT_STORE=store_kind,
                          CT_STATE=tmp_path)
    b = answer(second, "get")
    assert b["location"] == location, b
    if survives:
        assert b["id"] == a["id"] and b["source"] == "file", (a, b)
    else:
        assert b["id"] != a["id"] and b["source"] == "created", (a, b)


def test_container_mount_table_is_read_whole(cli):
    """Issue 35, case 4: a store on a tmpfs the container has whole, its mount listed after 1.4 MB of
    others and under a bind mount at /var/lib. 0.3.0 read the table's first 1 MiB only, found the
    /var/lib bind holding the store, and said bind-mount ("survives docker rm")."""
    steps = [{"tag": "size", "argv": ["/usr/bin/wc", "-c", "/proc/self/mountinfo"]}, step("get", "get", ID_NAME)]
    results = in_container(cli, steps, CT_STORE="tmpfs", CT_PAD_MOUNTS=200)
    assert int(results["size"]["out"].split()[0]) > 1 << 20, results["size"]
    got = answer(results, "get")
    assert got["location"] == "container", got


def test_a_container_whose_mount_table_cannot_be_read_says_undetermined(cli):
    """Issue 35, case 4: a table not read whole gives no label. In a mount namespace of the container
    whose /proc is gone, the store (a volume, which would be "volume") is "undetermined", which
    promises nothing about docker rm; the ID is still kept there and answered again."""
    no_proc = ["/usr/bin/unshare", "--mount", "/bin/sh", "-c", 'umount -l /proc && exec "$0" --json get "$1"',
               "CLI", ID_NAME]
    steps = [{"tag": "get", "argv": no_proc}, {"tag": "again", "argv": no_proc}, step("with-proc", "get", ID_NAME)]
    results = in_container(cli, steps, CT_STORE="volume")
    got, again, with_proc = answer(results, "get"), answer(results, "again"), answer(results, "with-proc")
    assert_identifier(got, source="created", location="undetermined")
    assert again["id"] == got["id"] and again["location"] == "undetermined", again
    assert with_proc["id"] == got["id"] and with_proc["location"] == "volume", with_proc


@pytest.mark.parametrize("mount_point, store", [
    (b"/var/lib/x\xfe", "/var/lib/x\ufffd"),           # 0.3.0 folded the mount point's 0xFE to U+FFFD
    ("/var/lib/caf\u00e9".encode(), "/var/lib/cafe\u0301"),   # NFC and NFD: equal as Swift Strings
])
def test_container_mount_points_are_compared_byte_for_byte(cli, tmp_path, mount_point, store):
    """Issue 35, case 3: a host directory bound at a mount point, and a store at a path that only
    folding or canonical equivalence makes the same: the store is in the container's own layer.
    0.3.0 said bind-mount ("survives docker rm") and wrote the ID on the container's disk."""
    host_dir = tmp_path / "volume"
    results = in_container(cli, [step("get", "--store-dir", store, "get", ID_NAME)],
                           CT_BIND_RW=f"{host_dir}:{os.fsdecode(mount_point)}")
    got = answer(results, "get")
    assert got["location"] == "container", got
    assert os.listdir(host_dir) == [], "nothing kept in the bound host directory"


def test_container_bind_mount_of_a_chosen_host_directory(cli, tmp_path):
    host_dir = tmp_path / "srv-ids"
    first = answer(in_container(cli, [step("get", "get", ID_NAME)], CT_STORE="bind", CT_STORE_SRC=host_dir), "get")
    assert_identifier(first, location="bind-mount")
    assert any(n.startswith("id-") for n in os.listdir(host_dir)), "kept in the bind-mounted host directory"
    second = answer(in_container(cli, [step("get", "get", ID_NAME)], CT_STORE="bind", CT_STORE_SRC=host_dir), "get")
    assert second["id"] == first["id"]


def machine_id_steps():
    return [step("app-specific", "machine-id", "app-specific", APP128),
            {"tag": "systemd", "argv": ["systemd-id128", "machine-id", f"--app-specific={APP128}"]},
            {"tag": "machine-id", "argv": ["cat", "/etc/machine-id"]},
            step("doctor", "doctor")]


def app_specific(machine_id, app):
    """sd_id128_get_machine_app_specific(3): HMAC-SHA256(machine ID, app ID), 16 bytes as a v4 UUID."""
    import hmac
    digest = bytearray(hmac.new(bytes.fromhex(machine_id), bytes.fromhex(app), "sha256").digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x40
    digest[8] = (digest[8] & 0x3F) | 0x80
    return digest.hex()


@pytest.mark.parametrize("kind, fresh, name, weak", [
    ("docker", False, "docker", True),
    ("podman", False, "podman", True),
    ("nspawn", True, "systemd-nspawn", False),
    # No manager's marker, only the namespaces: systemd 256 and later call it "container-other".
    ("none", False, "container-other", True),
])
def test_container_machine_id_weakness(cli, kind, fresh, name, weak):
    machine_id = FRESH_MACHINE_ID if fresh else IMAGE_MACHINE_ID
    results = in_container(cli, machine_id_steps(), CT_KIND=kind, CT_MACHINE_ID=machine_id,
                           CT_MACHINE_ID_FRESH=1 if fresh else 0, CT_STORE="tmpfs")
    assert results["machine-id"]["out"].strip() == machine_id, results["machine-id"]
    a = answer(results, "app-specific")
    assert results["systemd"]["rc"] == 0, results["systemd"]
    assert a["id"].replace("-", "") == results["systemd"]["out"].strip() == app_specific(machine_id, APP128), \
        "machine-id app-specific is sd_id128_get_machine_app_specific of the container's /etc/machine-id"
    assert a.get("weak") is weak, a
    if weak:
        assert isinstance(a.get("weak_reason"), str) and a["weak_reason"], a
    else:
        assert "weak_reason" not in a, a
    env = environment(answer(results, "doctor"))
    assert (env["kind"], env["name"]) == ("container", name), env
    assert env["machine_id"]["weak"] is weak, env
    assert env["portal"]["state"] in ("absent", "not-asked"), env
