"""`python -m deviceid`: the main verbs of the deviceid command, for machines with only Python.

    python -m deviceid get com.example.app
    python -m deviceid --json vendor get com.example

Pure Python over the library (it never runs the deviceid command), with the command's contract:
the same text, the same --json objects (docs/cli-json.schema.json, which both are tested against
in Tests/python/test_cli_contract.py), the same usage errors and exit codes: 0, 1 not found,
2 usage, 10 + |status|. The backend and the store come from the environment (DEVICEID_BACKEND,
DEVICEID_STORE_DIR, ...); --backend and the other options are the deviceid command's.
"""
import json
import os
import sys

import deviceid

PROGRAM = "python -m deviceid"
HINT = f"{PROGRAM} --help"

# (command, synopsis, what it does): the usage text and `help COMMAND` are made from these.
FORMS = [
    ("get", "get APP_ID", "this device's stable ID for APP_ID"),
    ("reset", "reset APP_ID", "forget it; the next get mints a new one"),
    ("vendor", "vendor get|reset VENDOR_ID", "identifierForVendor"),
    ("advertising", "advertising [get|reset]", "the advertising ID (zeros while tracking is limited)"),
    ("advertising", "advertising limit [on|off]", "whether advertising tracking is limited"),
    ("openudid", "openudid get APP_ID", "the ID every app of this user shares"),
    ("openudid", "openudid opt-out APP_ID on|off", "opt the app out of it, or back in"),
    ("openudid", "openudid reset", "forget it"),
    ("uuid", "uuid", "a random UUID v4"),
    ("machine-id", "machine-id app-specific APP_ID", "systemd's app-specific machine ID"),
    ("machine-id", "machine-id raw", "the raw machine ID (prefer app-specific)"),
    ("version", "version", "the library's version"),
    ("help", "help [COMMAND]", "this text, or one command's"),
]


def _line(synopsis, what):
    return f"  {synopsis}{' ' * max(1, 33 - len(synopsis))}{what}\n"


USAGE = (f"usage: {PROGRAM} [--json] COMMAND [ARGS]\n\ncommands:\n"
         + "".join(_line(synopsis, what) for _, synopsis, what in FORMS)
         + "\noptions:\n  --json       machine-readable output and errors (docs/cli-json.schema.json)\n"
         "  -h, --help   this text; after a command, that command's\n  --version    the version\n\n"
         "The backend and the store come from DEVICEID_BACKEND, DEVICEID_STORE_DIR and the other\n"
         "DEVICEID_* variables; the deviceid command has every command and option.\n\n"
         "exit status: 0 success, 1 not found, 2 usage, 10+|status| for other failures.\n")

# What the library puts before the reason a keyring did not keep an ID (deviceid_last_error());
# the command's keyring_error is the reason alone.
_KEPT_ONLY = "kept only in the file store: "


class _Usage(Exception):
    """A usage error: one line, and where to read more (the command's own help, when there is one)."""

    def __init__(self, message, command=None):
        super().__init__(message)
        self.command = command


def _hint(command):
    return f"{PROGRAM} help {command}" if any(command == known for known, _, _ in FORMS) else HINT


def _command_of(args):
    """The command word, if the arguments name one (for the hint of a usage error found first)."""
    for argument in args:
        if argument is None or not argument.startswith("-"):
            return argument
    return None


class _Output:
    def __init__(self, as_json):
        self.json = as_json

    @staticmethod
    def write(text, stream):
        # UTF-8 whatever the locale, as the command writes it.
        stream.flush()
        if hasattr(stream, "buffer"):
            stream.buffer.write(text.encode("utf-8", "replace"))
        else:  # a replaced sys.stdout (a test's capture) takes text
            stream.write(text)
        stream.flush()

    @staticmethod
    def object(fields):
        return json.dumps(fields, separators=(",", ":"), ensure_ascii=False)

    def say(self, text, fields):
        """An answer: text, or its object under --json."""
        self.write((self.object(fields) if self.json else text) + "\n", sys.stdout)

    def done(self, fields):
        """What a command that prints nothing in text says under --json."""
        if self.json:
            self.write(self.object(fields) + "\n", sys.stdout)

    def note(self, text):
        self.write(f"deviceid: note: {text}\n", sys.stderr)

    def usage_error(self, message, command=None):
        hint = _hint(command)
        if self.json:
            self.write(self.object({"error": {"name": "USAGE", "message": message, "help": hint}}) + "\n", sys.stderr)
        else:
            self.write(f"deviceid: {message}\nTry '{hint}'.\n", sys.stderr)
        return 2

    def fail(self, error):
        if self.json:
            self.write(self.object({"error": {"status": error.status, "name": error.name, "message": str(error)}})
                       + "\n", sys.stderr)
        else:
            self.write(f"deviceid: {error}\n", sys.stderr)
        return 1 if error.status == deviceid.NotFoundError.status else 10 - error.status


def _wants_json(args):
    """Whether --json is among the options, for a usage error found before it is parsed."""
    return "--json" in (args[:args.index("--")] if "--" in args else args)


def _parse(args):
    """(as_json, words), the way the command reads its arguments: options anywhere before `--`."""
    as_json, words = False, []
    options_ended = False
    for argument in args:
        if not options_ended and argument == "-h":
            return as_json, ["help"] + words[:1]
        if options_ended or not argument.startswith("--") or argument == "-":
            words.append(argument)
            continue
        name = argument.split("=", 1)[0]
        if name == "--":
            options_ended = True
        elif name == "--json":
            as_json = True
        elif name == "--help":
            return as_json, ["help"] + words[:1]
        elif name == "--version":
            return as_json, ["version"]
        else:
            raise _Usage(f"unknown option '{name}'")
    return as_json, words


def _print_id(out, info, **name):
    fields = dict(name, id=info.id, source=info.source, device_changed=info.device_changed, weak=info.weak,
                  limited=info.limited, file_only=info.file_only, repaired=info.repaired, mirrored=info.mirrored,
                  provisional=info.provisional, app_data_only=info.app_data_only, location=info.location)
    reason = info.keyring_error
    if reason is not None and reason.startswith(_KEPT_ONLY):
        reason = reason[len(_KEPT_ONLY):]
    if info.file_only:
        fields["keyring_error"] = reason or "the keyring did not keep the ID"
    out.say(info.id, fields)
    if info.device_changed and not out.json:
        out.note("this ID was stored on another machine (clone or restored backup); `reset` re-mints it")
    # Said on stderr in both forms: a script reading stdout still gets the ID.
    if info.repaired:
        out.note("a corrupt copy of this ID in one store was replaced with the other store's")
    if info.file_only:
        out.note(f"kept only in the file store; the keyring will be tried again: {fields['keyring_error']}")


def _on_off(word):
    return {"on": True, "off": False}.get(word)


def _help(out, operands):
    if not operands:
        out.say(USAGE.rstrip("\n"), {"help": USAGE})
        return 0
    topic = operands[0]
    forms = [(synopsis, what) for command, synopsis, what in FORMS if command == topic]
    if len(operands) != 1 or not forms:
        raise _Usage(f"no help for '{' '.join(operands)}': not a command")
    text = ("usage:\n" + "".join(f"  {PROGRAM} [--json] {synopsis}\n" for synopsis, _ in forms) + "\n"
            + "".join(f"  {synopsis}: {what}\n" for synopsis, what in forms) + f"\nGlobal options: {HINT}\n")
    out.say(text.rstrip("\n"), {"command": topic, "help": text})
    return 0


def _run(out, words):
    if not words:
        raise _Usage("no command given")
    command, operands = words[0], tuple(words[1:])
    n = len(operands)
    verb = operands[0] if operands else None
    if command == "get":
        if n != 1:
            raise _Usage("get takes one APP_ID", command)
        _print_id(out, deviceid.get_info(operands[0]), app_id=operands[0])
    elif command == "reset":
        if n != 1:
            raise _Usage("reset takes one APP_ID", command)
        deviceid.reset(operands[0])
        out.done({"app_id": operands[0], "reset": True})
    elif command == "vendor":
        if verb == "get" and n == 2:
            _print_id(out, deviceid.identifier("vendor", operands[1]), vendor_id=operands[1])
        elif verb == "reset" and n == 2:
            deviceid.reset_vendor_id(operands[1])
            out.done({"vendor_id": operands[1], "reset": True})
        else:
            raise _Usage("vendor takes get|reset VENDOR_ID", command)
    elif command == "advertising":
        if n == 0 or (verb == "get" and n == 1):
            _print_id(out, deviceid.identifier("advertising"))
        elif verb == "reset" and n == 1:
            deviceid.reset_advertising_id()
            out.done({"reset": True})
        elif verb == "limit" and n == 2 and _on_off(operands[1]) is not None:
            deviceid.set_advertising_limited(_on_off(operands[1]))
            out.done({"limited": _on_off(operands[1])})
        elif verb == "limit" and n == 1:
            limited = deviceid.advertising_limited()
            out.say("on" if limited else "off", {"limited": limited})
        else:
            raise _Usage("advertising takes get | reset | limit [on|off]", command)
    elif command == "openudid":
        if verb == "get" and n == 2:
            _print_id(out, deviceid.identifier("openudid", operands[1]), app_id=operands[1])
        elif verb == "opt-out" and n == 3 and _on_off(operands[2]) is not None:
            deviceid.set_openudid_opt_out(operands[1], _on_off(operands[2]))
            out.done({"app_id": operands[1], "opted_out": _on_off(operands[2])})
        elif verb == "reset" and n == 1:
            deviceid.reset_openudid()
            out.done({"reset": True})
        else:
            raise _Usage("openudid takes get APP_ID | opt-out APP_ID on|off | reset", command)
    elif command == "uuid":
        if n:
            raise _Usage("uuid takes no arguments", command)
        value = deviceid.uuid4()
        out.say(value, {"uuid": value})
    elif command == "machine-id":
        if verb == "app-specific" and n == 2:
            value = deviceid.machine_app_specific(operands[1])
        elif verb == "raw" and n == 1:
            value = deviceid.machine_id_raw(compact=False)
        else:
            raise _Usage("machine-id takes app-specific APP_ID | raw", command)
        weak, reason = deviceid.machine_id_weak()
        out.say(value, dict({"id": value, "weak": weak}, **({"weak_reason": reason} if weak else {})))
        if weak and not out.json:
            out.note(f"weak: {reason}")
    elif command == "version":
        out.say(f"deviceid {deviceid.__version__}", {"version": deviceid.__version__})
    elif command == "help":
        return _help(out, operands)
    else:
        raise _Usage(f"unknown command '{command}'")
    return 0


def main(argv=None):
    raw = [os.fsencode(a) for a in (sys.argv[1:] if argv is None else argv)]
    # One name, one key, as in the command: an argument that is not UTF-8 is refused whole, never
    # decoded into a name that another byte string would share.
    args = []
    for argument in raw:
        try:
            args.append(argument.decode("utf-8"))
        except UnicodeDecodeError:
            args.append(None)
    if None in args:
        return _Output(_wants_json(args)).usage_error(
            f"argument {args.index(None) + 1} is not valid UTF-8; names, paths and options must be", _command_of(args))
    try:
        as_json, words = _parse(args)
    except _Usage as usage:
        return _Output(_wants_json(args)).usage_error(str(usage), _command_of(args))
    out = _Output(as_json)
    try:
        return _run(out, words)
    except _Usage as usage:
        return out.usage_error(str(usage), usage.command)
    except deviceid.DeviceIDError as error:
        return out.fail(error)


if __name__ == "__main__":
    sys.exit(main())
