"""Every status a C function returns is on its list: the "Returns 0, or ..." paragraph of its doc
comment in include/deviceid.h and the ERRORS section of its manual page, which scripts/gen-man
makes from that paragraph.

What a function can return is derived by running it (status_probe.py calls every int-returning
function with good and bad arguments) in every condition the suite can set up with real parts —
a healthy keyring, none, one with no collection open, an invalid environment, broken file stores,
a missing or malformed machine ID — and, for faults the real gnome-keyring cannot show, the
fault-injecting Secret Service. A status seen and not documented fails, naming the function."""
import importlib.machinery
import importlib.util
import json
import os
import pathlib
import re

import pytest

from conftest import ROOT, WITH_KEYRING, run, tool

PROBE = str(ROOT / "Tests" / "python" / "status_probe.py")
FAKE = str(ROOT / "Tests" / "fakes" / "fake-secret-service")
BUS_CONFIG = str(ROOT / "scripts" / "session-no-activation.conf")
SECTIONS = ["NAME", "SYNOPSIS", "DESCRIPTION", "RETURN VALUE", "ERRORS", "THREAD SAFETY", "NOTES", "SEE ALSO"]


def gen_man():
    loader = importlib.machinery.SourceFileLoader("gen_man", str(ROOT / "scripts" / "gen-man"))
    spec = importlib.util.spec_from_loader("gen_man", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


GEN = gen_man()
STATUS_VALUES = {name: int(value) for name, (value, _) in GEN.STATUSES.items()}
NAMES_BY_VALUE = {value: name for name, value in STATUS_VALUES.items()}


def documented():
    """Function name -> the statuses its doc names (and DEVICEID_E_INTERNAL), for every function
    returning int."""
    groups, _, _ = GEN.header_entries()
    out = {}
    for _, group, doc, _ in groups:
        for name, declaration in group:
            if declaration.startswith("int "):
                out[name] = set(GEN.documented_statuses(doc or ""))
    return out


DOCUMENTED = documented()


def probe(tmp_path, label, backend=None, env=None, wrap=()):
    merged = {"DEVICEID_STORE_DIR": str(tmp_path / f"store-{label}"), "PROBE_TIMEOUT_MS": "1500"}
    merged.update(env or {})
    result = run([*wrap, "python3", PROBE, *([backend] if backend else [])], env=merged, timeout=300)
    assert result.returncode == 0, (label, result.stderr[-2000:])
    return json.loads(result.stdout.strip().splitlines()[-1])


def check(observed, label):
    undocumented = []
    for function, statuses in observed.items():
        assert function in DOCUMENTED, f"{function} returned a status and has no documented list"
        for value in statuses:
            name = NAMES_BY_VALUE.get(value, str(value))
            if name not in DOCUMENTED[function]:
                undocumented.append(f"{function}: {name}")
    assert not undocumented, f"{label}: statuses returned but not documented:\n" + "\n".join(sorted(set(undocumented)))


def test_every_int_function_documents_its_statuses():
    missing = [name for name, statuses in DOCUMENTED.items() if not statuses]
    assert not missing, f"no 'Returns 0, or ...' list: {missing}"
    for name, statuses in DOCUMENTED.items():
        assert statuses <= set(STATUS_VALUES), (name, statuses - set(STATUS_VALUES))


def test_every_page_has_the_sections_and_lists_the_statuses():
    man = pathlib.Path(tool("DEVICEID_TEST_CLI")).parents[1] / "share" / "man" / "man3"
    for name, statuses in DOCUMENTED.items():
        page = (man / f"{name}.3").read_text()
        if page.startswith(".so "):
            page = (man.parent / page.split()[1]).read_text()
        headings = re.findall(r'^\.SH "?([A-Z ]+)"?$', page, re.M)
        expected = [s for s in SECTIONS if statuses or s not in ("ERRORS",)]
        assert [h for h in headings if h in SECTIONS] == expected, (name, headings)
        errors = page.split(".SH ERRORS", 1)[1].split(".SH ", 1)[0] if statuses else ""
        listed = set(re.findall(r"^\.B (DEVICEID_E_\w+)", errors, re.M))
        assert listed == statuses, (name, listed ^ statuses)
    overview = (man / "deviceid.3").read_text()
    for status in STATUS_VALUES:
        assert f".B {status} (" in overview, f"deviceid(3) does not list {status}"


def test_statuses_with_a_healthy_keyring_and_the_file_store(tmp_path):
    for backend in ("auto", "secret-service", "file"):
        check(probe(tmp_path, backend, backend), backend)


def test_statuses_without_a_session_bus(tmp_path):
    observed = probe(tmp_path, "no-bus", "secret-service", env={"DBUS_SESSION_BUS_ADDRESS": None,
                                                             "XDG_RUNTIME_DIR": str(tmp_path)})
    assert -5 in observed["deviceid_get"], "no bus is UNAVAILABLE"
    check(observed, "no session bus")


def test_statuses_with_no_collection_open(tmp_path):
    for backend in ("secret-service", "auto"):
        observed = probe(tmp_path, f"no-collection-{backend}", backend, wrap=(WITH_KEYRING, "--no-unlock"))
        if backend == "secret-service":
            assert -17 in observed["deviceid_get"], "a real gnome-keyring with no keyring open"
        check(observed, f"no collection ({backend})")


def test_statuses_with_an_invalid_environment(tmp_path):
    observed = probe(tmp_path, "bad-env", env={"DEVICEID_BACKEND": "bogus"})
    assert -1 in observed["deviceid_get"]
    check(observed, "DEVICEID_BACKEND=bogus")


def test_statuses_with_broken_file_stores_and_machine_ids(tmp_path):
    (tmp_path / "target").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "target")
    (tmp_path / "file").write_text("not a directory")
    (tmp_path / "bad-machine-id").write_text("not a machine id\n")
    cases = {
        "symlink": {"DEVICEID_STORE_DIR": str(tmp_path / "link")},
        "under-a-file": {"DEVICEID_STORE_DIR": str(tmp_path / "file" / "store")},
        "no-machine-id": {"DEVICEID_MACHINE_ID_PATH": str(tmp_path / "missing")},
        "bad-machine-id": {"DEVICEID_MACHINE_ID_PATH": str(tmp_path / "bad-machine-id")},
    }
    seen = set()
    for label, env in cases.items():
        observed = probe(tmp_path, label, "file", env=env)
        seen |= {value for statuses in observed.values() for value in statuses}
        check(observed, label)
    assert {-9, -16, -3} <= seen, "PERMISSION, INVALID_MACHINE_ID and NOT_FOUND were provoked"


@pytest.mark.parametrize("mode", ["locked-error", pytest.param("slow", marks=pytest.mark.slow), "error:SearchItems",
                                  "error:GetSecrets", "error:CreateItem", pytest.param("prompt", marks=pytest.mark.slow),
                                  "vanish"])
def test_statuses_against_injected_faults(tmp_path, mode):
    body = f"""
        {FAKE} org.example.FakeSecrets '{mode}' >/dev/null 2>"{tmp_path}/fake.err" &
        gdbus wait --session --timeout 10 org.example.FakeSecrets
        export SECRET_SERVICE_BUS_NAME=org.example.FakeSecrets
        # Side by side: in the slow and prompt modes each probe waits out hundreds of deadlines.
        python3 {PROBE} secret-service > "{tmp_path}/secret-service.json" & service=$!
        python3 {PROBE} auto > "{tmp_path}/auto.json" & auto=$!
        wait $service && wait $auto
        cat "{tmp_path}/secret-service.json" "{tmp_path}/auto.json"
    """
    result = run(["dbus-run-session", f"--config-file={BUS_CONFIG}", "--", "bash", "-c", body],
                 env={"DEVICEID_STORE_DIR": str(tmp_path / "store"), "PROBE_TIMEOUT_MS": "300"}, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    for line in result.stdout.strip().splitlines()[-2:]:
        check(json.loads(line), mode)
