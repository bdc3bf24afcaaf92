"""One --json contract, docs/cli-json.schema.json, for the deviceid command (Sources/DeviceIDCLI),
also reached as `python -m deviceid` (python/deviceid/__main__.py runs the command). Each answer
and each error of a matrix of commands, happy and failing, is validated against the schema, and
both ways in must agree on it: the same kind of object, the same keys, the same values wherever
the value is not minted afresh, and the same exit status.

The schema is checked by a small validator of the JSON Schema 2020-12 keywords it uses (no
packages): a keyword the validator does not know fails the test rather than being ignored."""
import json
import os
import re
import sys
import uuid

import pytest

from conftest import KEYRING_CONTROL, ROOT, run

def _no_duplicate_keys(pairs):
    keys = [key for key, _ in pairs]
    assert len(keys) == len(set(keys)), f"a key twice in one object of the schema: {keys}"
    return dict(pairs)


SCHEMA = json.loads((ROOT / "docs" / "cli-json.schema.json").read_text(), object_pairs_hook=_no_duplicate_keys)
PYTHON_M = [sys.executable, "-m", "deviceid"]


# ---------------------------------------------------------------------------------------------
# A validator for the subset of JSON Schema (draft 2020-12) the contract is written in.

ANNOTATIONS = {"$schema", "$id", "$comment", "title", "description", "$defs"}
ASSERTIONS = {"$ref", "type", "const", "enum", "pattern", "minLength", "properties", "required",
              "additionalProperties", "items", "allOf", "anyOf", "oneOf", "not", "if", "then", "else"}
SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf")
SUBSCHEMAS = ("additionalProperties", "items", "not", "if", "then", "else")
TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "null": lambda v: v is None,
}


def resolve(reference, root=SCHEMA):
    """A local reference: `#/$defs/name` (a JSON pointer into the schema)."""
    assert reference.startswith("#/"), f"only local references: {reference}"
    node = root
    for part in reference[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def json_equal(a, b):
    """Equality as JSON has it: true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def violations(instance, schema, where="$"):
    """How `instance` breaks `schema`: a list of messages, empty when it conforms."""
    if schema is True:
        return []
    if schema is False:
        return [f"{where}: nothing is allowed here"]
    unknown = set(schema) - ANNOTATIONS - ASSERTIONS
    assert not unknown, f"the contract's validator does not know {sorted(unknown)}"
    found = []
    if "$ref" in schema:
        found += violations(instance, resolve(schema["$ref"]), where)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(TYPES[t](instance) for t in types):
            return found + [f"{where}: {json.dumps(instance)} is not of type {'/'.join(types)}"]
    if "const" in schema and not json_equal(instance, schema["const"]):
        found.append(f"{where}: {json.dumps(instance)} is not {json.dumps(schema['const'])}")
    if "enum" in schema and not any(json_equal(instance, v) for v in schema["enum"]):
        found.append(f"{where}: {json.dumps(instance)} is not one of {schema['enum']}")
    if isinstance(instance, str):
        if "pattern" in schema and not re.search(schema["pattern"], instance):
            found.append(f"{where}: {instance!r} does not match {schema['pattern']}")
        if len(instance) < schema.get("minLength", 0):
            found.append(f"{where}: {instance!r} is shorter than {schema['minLength']}")
    if isinstance(instance, dict):
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in instance:
                found.append(f"{where}: {name!r} is missing")
        for name, value in instance.items():
            if name in properties:
                found += violations(value, properties[name], f"{where}.{name}")
            elif "additionalProperties" in schema:
                extra = violations(value, schema["additionalProperties"], f"{where}.{name}")
                found += [f"{where}: {name!r} is not allowed"] if schema["additionalProperties"] is False else extra
    if isinstance(instance, list) and "items" in schema:
        for index, item in enumerate(instance):
            found += violations(item, schema["items"], f"{where}[{index}]")
    for sub in schema.get("allOf", []):
        found += violations(instance, sub, where)
    if "anyOf" in schema and all(violations(instance, sub, where) for sub in schema["anyOf"]):
        found.append(f"{where}: matches none of anyOf")
    if "oneOf" in schema:
        matching = sum(not violations(instance, sub, where) for sub in schema["oneOf"])
        if matching != 1:
            found.append(f"{where}: matches {matching} of oneOf, not exactly one")
    if "not" in schema and not violations(instance, schema["not"], where):
        found.append(f"{where}: matches what `not` forbids")
    if "if" in schema:
        branch = "then" if not violations(instance, schema["if"], where) else "else"
        if branch in schema:
            found += violations(instance, schema[branch], where)
    return found


def subschemas(schema):
    """Every schema inside `schema`, itself included."""
    yield schema
    if not isinstance(schema, dict):
        return
    for name in ("$defs", "properties"):
        for sub in schema.get(name, {}).values():
            yield from subschemas(sub)
    for name in SUBSCHEMA_LISTS:
        for sub in schema.get(name, []):
            yield from subschemas(sub)
    for name in SUBSCHEMAS:
        if name in schema:
            yield from subschemas(schema[name])


OBJECTS = [entry["$ref"].rsplit("/", 1)[1] for entry in SCHEMA["anyOf"]]


def kinds(instance):
    """The objects of the contract `instance` is (normally exactly one)."""
    return [name for name in OBJECTS if not violations(instance, SCHEMA["$defs"][name])]


def conforms(instance, kind):
    """Asserts that `instance` is the contract's object `kind` (an error for a status name or USAGE)."""
    assert not violations(instance, SCHEMA), (instance, violations(instance, SCHEMA))
    if kind in OBJECTS:
        assert kind in kinds(instance), (instance, kind, violations(instance, SCHEMA["$defs"][kind]))
    else:
        assert kinds(instance) == ["error"] and instance["error"]["name"] == kind, (instance, kind)


def exit_status(instance):
    """The exit status the contract gives an object (docs/cli-json.schema.json, top description)."""
    if "error" not in instance:
        return 0
    error = instance["error"]
    if error["name"] == "USAGE":
        return 2
    return 1 if error["status"] == -3 else 10 - error["status"]


def test_the_schema_uses_only_what_its_validator_checks():
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    for sub in subschemas(SCHEMA):
        if isinstance(sub, dict):
            assert not set(sub) - ANNOTATIONS - ASSERTIONS, sorted(set(sub) - ANNOTATIONS - ASSERTIONS)
            if "$ref" in sub:
                resolve(sub["$ref"])
            if "pattern" in sub:
                re.compile(sub["pattern"])
        else:
            assert isinstance(sub, bool)
    assert set(OBJECTS) <= set(SCHEMA["$defs"])


GOOD_ID = {"app_id": "a", "id": "1b4e28ba-2fa1-4d2b-883f-0016d3cca427", "source": "keyring",
           "device_changed": False, "weak": False, "limited": False, "file_only": False, "repaired": False,
           "mirrored": False, "provisional": False, "app_data_only": False, "anchor_changed": False,
           "location": "keyring"}


@pytest.mark.parametrize("instance", [
    dict(GOOD_ID, extra=1),                                                  # an unknown key
    {k: v for k, v in GOOD_ID.items() if k != "mirrored"},                   # a flag missing
    dict(GOOD_ID, weak=0),                                                   # a number for a boolean
    dict(GOOD_ID, source="cloud"),
    dict(GOOD_ID, location="cloud"),
    {k: v for k, v in GOOD_ID.items() if k != "location"},                   # where it lives, always said
    {"id": "1b4e28ba-2fa1-4d2b-883f-0016d3cca427", "weak": True},            # weak says why
    dict(GOOD_ID, id="1B4E28BA-2FA1-4D2B-883F-0016D3CCA427"),
    dict(GOOD_ID, file_only=True),                                           # file_only says why
    dict(GOOD_ID, keyring_error="locked"),                                   # and only file_only
    dict(GOOD_ID, vendor_id="v"),
    {"error": {"status": -4, "name": "UNAVAILABLE", "message": "m"}},        # status and name disagree
    {"error": {"status": True, "name": "INVALID_ARGUMENT", "message": "m"}},
    {"error": {"name": "USAGE", "message": "m"}},
    {"error": {"status": -1, "name": "USAGE", "message": "m", "help": "h"}},
    {"uuid": "x"}, {"reset": False}, {"hash": "00"}, [], "text",
    {"hardware_id": "3cf7bfbe-c440-8b82-aea9-3ca59341abdc"},                 # for which app, always said
])
def test_the_validator_refuses_what_the_contract_does_not_allow(instance):
    assert violations(instance, SCHEMA)


def test_the_validator_accepts_the_documented_objects():
    assert kinds(GOOD_ID) == ["identifier"]
    assert kinds(dict(GOOD_ID, file_only=True, keyring_error="locked")) == ["identifier"]
    assert kinds({"error": {"status": -3, "name": "NOT_FOUND", "message": "not found"}}) == ["error"]
    assert kinds({"error": {"name": "USAGE", "message": "m", "help": "deviceid --help"}}) == ["error"]
    assert kinds({"app_id": "a", "reset": True}) == ["reset"]
    assert kinds({"limited": True}) == ["advertisingLimit"]
    assert kinds({"sha256": "0" * 64}) == ["hash"]
    assert kinds({"app_id": "a", "hardware_id": "3cf7bfbe-c440-8b82-aea9-3ca59341abdc"}) == ["hardwareID"]
    assert kinds({"tpm": "device:/dev/tpmrm0", "forgotten": False}) == ["tpmPinForgotten"]


# ---------------------------------------------------------------------------------------------
# The contract and include/deviceid.h: one list of flags, sources, backends and statuses.

def header_family(prefix):
    """DEVICEID_<prefix>* of the header, read as the binding's constant-drift test reads them."""
    import test_binding  # a module attribute, so that pytest does not collect its tests here again

    return {name[len(prefix):]: value for name, value in test_binding.header_defines().items()
            if name.startswith(prefix)}


def test_the_contract_has_every_flag_source_backend_and_status_of_the_header():
    identifier = SCHEMA["$defs"]["identifier"]
    booleans = {name for name, sub in identifier["properties"].items() if sub.get("type") == "boolean"}
    assert booleans == {name.lower() for name in header_family("FLAG_")}, "one boolean per DEVICEID_FLAG_*"
    assert set(identifier["properties"]["source"]["enum"]) == {name.lower() for name in header_family("SOURCE_")}
    import deviceid
    for name, value in header_family("SOURCE_").items():
        assert deviceid._native.source_name(value).decode() == name.lower(), "Python names sources as the CLI"
    backends = SCHEMA["$defs"]["doctor"]["properties"]["backend"]["enum"]
    assert set(backends) == {name.lower().replace("_", "-") for name in header_family("BACKEND_")}
    table = {entry["properties"]["name"]["const"]: entry["properties"]["status"]["const"]
             for entry in SCHEMA["$defs"]["statusError"]["oneOf"]}
    assert table == header_family("E_"), "the statusError table is DEVICEID_E_*"
    assert set(deviceid.StableID._fields) >= booleans | {"id", "source", "keyring_error"}, \
        "python -m deviceid has every field the contract prints"


# ---------------------------------------------------------------------------------------------
# The two producers, side by side.

# Keys whose values each run mints afresh; every other value must be the same in both.
MINTED = {"identifier": {"id"}, "uuid": {"uuid"}, "help": {"help"}}


def answer(result):
    """The one JSON object a --json run printed: on stdout for an answer, on stderr (with nothing
    on stdout) for an error, one line each; and the exit status, which must be the contract's."""
    stream = result.stdout if result.returncode == 0 else result.stderr
    assert stream.endswith("\n") and stream.count("\n") == 1, (result.returncode, result.stdout, result.stderr)
    if result.returncode != 0:
        assert result.stdout == "", result.stdout
    instance = json.loads(stream)
    assert result.returncode == exit_status(instance), (result.returncode, instance)
    return instance


def assert_agree(theirs, mine, kind, names=None):
    """The command's answer and python -m deviceid's: same keys, same deterministic values."""
    assert set(mine) == set(theirs), (kind, sorted(set(mine) ^ set(theirs)))
    if "error" in theirs:
        a, b = theirs["error"], mine["error"]
        assert set(a) == set(b), (a, b)
        assert {k: v for k, v in a.items() if k != "help"} == {k: v for k, v in b.items() if k != "help"}
        if "help" in a:  # the same hint, in each one's name
            assert b["help"].replace("python -m deviceid", "deviceid", 1) == a["help"], (a, b)
        return
    for key in theirs:
        if key in MINTED.get(kind, ()):
            assert type(mine[key]) is type(theirs[key])
        elif names and key in names:
            assert (theirs[key], mine[key]) == names[key], key
        else:
            assert mine[key] == theirs[key], (kind, key, theirs[key], mine[key])


def both(cli, steps, env, tmp_path, names=None):
    """Runs the steps with each producer, each in a file store of its own, and checks every answer."""
    outputs = {}
    for tag, program in (("swift", [cli]), ("python", PYTHON_M)):
        store = tmp_path / tag
        results = []
        for args, kind in steps:
            words = [w.format(**(names or {}).get(tag, {})) if isinstance(w, str) else w for w in args]
            # The environment of the case wins, a store directory it names included.
            result = run(program + ["--json"] + words, env=dict({"DEVICEID_STORE_DIR": str(store)}, **env))
            try:
                instance = answer(result)
                conforms(instance, kind)
            except AssertionError as error:
                raise AssertionError(f"{tag}, {words}: {error}") from None
            results.append(instance)
        outputs[tag] = results
    pairs = {key: (names["swift"][key], names["python"][key]) for key in names["swift"]} if names else None
    for (args, kind), theirs, mine in zip(steps, outputs["swift"], outputs["python"]):
        try:
            assert_agree(theirs, mine, kind if kind in OBJECTS else "error", pairs)
        except AssertionError as error:
            raise AssertionError(f"{args}: the command and python -m deviceid disagree: {error}") from None
    return outputs


FILE = {"DEVICEID_BACKEND": "file"}
LONG = "a" * 256

CASES = {
    "get": [(["get", "c.app"], "identifier"), (["get", "c.app"], "identifier")],
    "reset": [(["get", "c.app"], "identifier"), (["reset", "c.app"], "reset"), (["get", "c.app"], "identifier")],
    "vendor": [(["vendor", "get", "c.vendor"], "identifier"), (["vendor", "get", "c.vendor"], "identifier"),
               (["vendor", "reset", "c.vendor"], "reset")],
    "advertising": [(["advertising"], "identifier"), (["advertising", "get"], "identifier"),
                    (["advertising", "limit"], "advertisingLimit"),
                    (["advertising", "limit", "on"], "advertisingLimit"), (["advertising"], "identifier"),
                    (["advertising", "limit", "off"], "advertisingLimit"), (["advertising", "reset"], "reset")],
    "openudid": [(["openudid", "get", "c.app"], "identifier"),
                 (["openudid", "opt-out", "c.app", "on"], "openudidOptOut"),
                 (["openudid", "get", "c.app"], "OPTED_OUT"),
                 (["openudid", "opt-out", "c.app", "off"], "openudidOptOut"),
                 (["openudid", "get", "c.app"], "identifier"), (["openudid", "reset"], "reset")],
    "uuid": [(["uuid"], "uuid")],
    "machine-id": [(["machine-id", "app-specific", "c.app"], "id128"), (["machine-id", "raw"], "id128")],
    "version": [(["version"], "version"), (["--version"], "version")],
    "help": [(["help"], "help"), (["help", "get"], "help"), (["get", "--help"], "help"), (["vendor", "-h"], "help")],
    "invalid names": [(["get", "tab\there"], "INVALID_ARGUMENT"),
                      (["get", LONG], "INVALID_ARGUMENT"), (["get", "del\x7f"], "INVALID_ARGUMENT")],
    # An empty word is a usage error, as a missing one is (0.3.0: INVALID_ARGUMENT, exit 11).
    "empty words": [(["get", ""], "USAGE"), (["reset", ""], "USAGE"), (["vendor", "get", ""], "USAGE"),
                    (["openudid", "get", ""], "USAGE"), (["machine-id", "app-specific", ""], "USAGE"),
                    (["secret", "lookup", "", "a"], "USAGE"), (["", "get"], "USAGE")],
    "usage": [([], "USAGE"), (["frobnicate"], "USAGE"), (["get"], "USAGE"), (["get", "a", "b"], "USAGE"),
              (["--colour", "get", "a"], "USAGE"), (["help", "frobnicate"], "USAGE"), (["uuid", "x"], "USAGE"),
              (["vendor", "peek", "v"], "USAGE"), (["advertising", "limit", "maybe"], "USAGE"),
              (["openudid", "opt-out", "a"], "USAGE"), (["machine-id", "cooked"], "USAGE"),
              (["--", "--json"], "USAGE"), ([b"get", b"\xff"], "USAGE"), ([b"\xfe"], "USAGE")],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_both_producers_answer_the_same_in_the_file_store(cli, store, tmp_path, case):
    both(cli, CASES[case], FILE, tmp_path)


def test_the_id_of_one_is_the_id_of_the_other(cli, store, tmp_path):
    env = dict(FILE, DEVICEID_STORE_DIR=str(tmp_path / "shared"))
    minted = answer(run([cli, "--json", "get", "c.shared"], env=env))
    read = answer(run(PYTHON_M + ["--json", "get", "c.shared"], env=env))
    assert (minted["source"], read["source"]) == ("created", "file")
    assert read == dict(minted, source="file")


@pytest.mark.parametrize("env, args, kind", [
    ({"DEVICEID_BACKEND": "bogus"}, ["get", "a"], "INVALID_ARGUMENT"),
    ({"DEVICEID_STORE_DIR": "relative"}, ["get", "a"], "INVALID_ARGUMENT"),
    ({"DEVICEID_TIMEOUT_MS": "0"}, ["get", "a"], "INVALID_ARGUMENT"),
    ({"DEVICEID_BACKEND": "secret-service", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent"},
     ["get", "a"], "UNAVAILABLE"),
    ({"DEVICEID_BACKEND": "secret-service", "DBUS_SESSION_BUS_ADDRESS": None, "XDG_RUNTIME_DIR": "/nonexistent"},
     ["vendor", "get", "v"], "UNAVAILABLE"),
    ({"DEVICEID_MACHINE_ID_PATH": "{tmp}/empty"}, ["machine-id", "app-specific", "a"], "INVALID_MACHINE_ID"),
    ({"DEVICEID_MACHINE_ID_PATH": "{tmp}/missing"}, ["machine-id", "raw"], "NOT_FOUND"),
], ids=["bad-backend", "relative-store", "zero-timeout", "unreachable-bus", "no-bus", "empty-machine-id",
        "missing-machine-id"])
def test_both_producers_fail_the_same_way(cli, store, tmp_path, env, args, kind):
    (tmp_path / "empty").write_text("")
    env = {key: value.format(tmp=tmp_path) if value else value for key, value in env.items()}
    both(cli, [(args, kind)], env, tmp_path)


def test_a_corrupt_copy_is_the_same_error_in_both(cli, store, tmp_path):
    env = dict(FILE, DEVICEID_STORE_DIR=str(tmp_path / "shared"))
    answer(run([cli, "--json", "get", "c.corrupt"], env=env))
    (path,) = (tmp_path / "shared").glob("id-*")
    data = path.read_bytes()
    path.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))
    theirs = answer(run([cli, "--json", "get", "c.corrupt"], env=env))
    mine = answer(run(PYTHON_M + ["--json", "get", "c.corrupt"], env=env))
    conforms(theirs, "CORRUPT")
    conforms(mine, "CORRUPT")
    assert_agree(theirs, mine, "error")


def unique(tag):
    return f"contract.{tag}.{uuid.uuid4().hex[:12]}"


@pytest.mark.parametrize("backend", ["auto", "secret-service"])
def test_both_producers_answer_the_same_from_the_keyring(cli, store, keyring, tmp_path, backend):
    names = {"swift": {"app_id": unique("swift")}, "python": {"app_id": unique("python")}}
    steps = [(["get", "{app_id}"], "identifier"), (["get", "{app_id}"], "identifier"),
             (["reset", "{app_id}"], "reset"), (["get", "{app_id}"], "identifier")]
    outputs = both(cli, steps, {"DEVICEID_BACKEND": backend}, tmp_path, names)
    first, second = outputs["swift"][:2]
    assert first["source"] == "created" and second["source"] == "keyring" and second["id"] == first["id"]


def test_a_locked_keyring_is_the_same_error_in_both(cli, store, keyring, tmp_path):
    run([KEYRING_CONTROL, "lock"])
    names = {"swift": {"app_id": unique("swift")}, "python": {"app_id": unique("python")}}
    both(cli, [(["get", "{app_id}"], "LOCKED"), (["vendor", "get", "{app_id}"], "LOCKED")], {}, tmp_path, names)


FAKE = str(ROOT / "Tests" / "fakes" / "fake-secret-service")
BUS_CONFIG = str(ROOT / "scripts" / "session-no-activation.conf")


def in_fake_keyring(mode, program, args, directory):
    """One --json run against a fault-injecting Secret Service on a private bus of its own."""
    directory.mkdir()
    script = f"""
        {FAKE} org.example.FakeSecrets '{mode}' >/dev/null 2>"{directory}/fake.err" &
        gdbus wait --session --timeout 10 org.example.FakeSecrets
        export SECRET_SERVICE_BUS_NAME=org.example.FakeSecrets DEVICEID_STORE_DIR="{directory}/store"
        "$@" >"{directory}/out" 2>"{directory}/err"; echo $? >"{directory}/rc"
    """
    run(["dbus-run-session", f"--config-file={BUS_CONFIG}", "--", "bash", "-c", script, "bash",
         *program, "--json", *args], env={"DEVICEID_BACKEND": None, "DEVICEID_TIMEOUT_MS": "2000"}, timeout=90)

    class Result:
        returncode = int((directory / "rc").read_text())
        stdout = (directory / "out").read_text()
        stderr = (directory / "err").read_text()
    return Result


@pytest.mark.parametrize("mode, args, kind", [
    ("error:CreateItem", ["get", "app"], "identifier"),  # kept in the file store only: keyring_error
    ("error:CreateItem", ["vendor", "get", "v"], "identifier"),
    ("error:SearchItems", ["get", "app"], "KEYRING"),
    ("locked-error", ["get", "app"], "LOCKED"),
])
def test_a_refusing_keyring_is_reported_the_same_by_both(cli, tmp_path, mode, args, kind):
    results = []
    for tag, program in (("swift", [cli]), ("python", PYTHON_M)):
        result = in_fake_keyring(mode, program, args, tmp_path / tag)
        instance = answer(result)
        conforms(instance, kind)
        results.append(instance)
        if kind == "identifier":
            assert instance["file_only"] is True and instance["keyring_error"], instance
            assert instance["source"] == "created" and instance["provisional"] is True, instance
            assert "kept only in the file store; the keyring will be tried again: " + instance["keyring_error"] \
                in result.stderr, (tag, result.stderr)
    assert_agree(results[0], results[1], kind if kind in OBJECTS else "error")


# ---------------------------------------------------------------------------------------------
# Every object the command prints, including those python -m deviceid does not have.

def test_every_answer_of_the_command_is_in_the_contract(cli, store, keyring, tmp_path):
    env = {"DEVICEID_STORE_DIR": str(tmp_path / "every")}
    calls = [
        (["get", "e.app"], None, "identifier"), (["reset", "e.app"], None, "reset"),
        (["secret", "store", "e.s", "e.a"], "value", "secretStored"),
        (["secret", "lookup", "e.s", "e.a"], None, "secretLookup"),
        (["secret", "store", "e.s", "e.b"], b"\xff\x00", "secretStored"),
        (["secret", "lookup", "e.s", "e.b"], None, "secretLookup"),
        (["secret", "delete", "e.s", "e.a"], None, "secretDeleted"),
        (["secret", "lookup", "e.s", "e.a"], None, "NOT_FOUND"),
        (["secret", "delete", "e.s", "e.a"], None, "NOT_FOUND"),
        (["secret", "store", "deviceid.app", "e.a"], "x", "INVALID_ARGUMENT"),
        (["secret", "store", "e.s", "e.a"], b"x" * 65537, "TOO_LARGE"),
        (["vendor", "get", "e.v"], None, "identifier"), (["vendor", "reset", "e.v"], None, "reset"),
        (["advertising"], None, "identifier"), (["advertising", "reset"], None, "reset"),
        (["advertising", "limit"], None, "advertisingLimit"),
        (["openudid", "get", "e.app"], None, "identifier"),
        (["openudid", "opt-out", "e.app", "off"], None, "openudidOptOut"), (["openudid", "reset"], None, "reset"),
        (["uuid"], None, "uuid"), (["uuid", "--uppercase"], None, "uuid"), (["uuid", "--compact"], None, "uuid"),
        (["hash", "sha256"], "x", "hash"), (["hash", "md5", "--bundle", "b"], "x", "hash"),
        (["machine-id", "app-specific", "e.app"], None, "id128"), (["machine-id", "raw", "--compact"], None, "id128"),
        (["doctor"], None, "doctor"), (["version"], None, "version"), (["help"], None, "help"),
        (["help", "secret"], None, "help"), (["secret", "peek", "s", "a"], None, "USAGE"),
        (["--backend", "cloud", "get", "a"], None, "USAGE"), (["--timeout", "0", "get", "a"], None, "USAGE"),
    ]
    for args, stdin, kind in calls:
        result = run([cli, "--json"] + args, input=stdin, env=env)
        if isinstance(stdin, bytes):
            result.stdout, result.stderr = result.stdout.decode(), result.stderr.decode()
        conforms(answer(result), kind)
    # The machine's own: an answer where it has one, else an error (both in the contract).
    for args, kind in [(["mac"], "mac"), (["mac", "--compact"], "mac"), (["mac-md5"], "macMD5"),
                       (["product-uuid", "raw"], "id128")]:
        result = run([cli, "--json"] + args, env=env)
        instance = answer(result)
        conforms(instance, kind if result.returncode == 0 else instance["error"]["name"])


def test_an_unhealthy_doctor_still_answers_on_stdout(cli, store, tmp_path):
    result = run([cli, "--json", "doctor"], env={"DEVICEID_BACKEND": "secret-service",
                                                 "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent"})
    assert result.returncode == 15 and result.stdout.count("\n") == 1, result
    instance = json.loads(result.stdout)
    conforms(instance, "doctor")
    assert instance["healthy"] is False
