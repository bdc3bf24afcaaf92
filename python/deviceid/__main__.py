"""`python -m deviceid`: the main verbs of the deviceid command, for machines with only Python.

    python -m deviceid get com.example.app
    python -m deviceid --json vendor get com.example

Output, --json objects and exit codes are the CLI's: 0, 1 not found, 2 usage, 10 + |status|.
"""
import json
import sys

import deviceid

USAGE = """usage: python -m deviceid [--json] COMMAND [ARGS]

commands:
  get APP_ID                 this device's stable ID for APP_ID
  reset APP_ID               forget it; the next get mints a new one
  vendor get|reset VENDOR    identifierForVendor
  advertising [get|reset]    the advertising ID (zeros while tracking is limited)
  openudid get APP_ID        the ID every app of this user shares
  uuid                       a random UUID v4
  machine-id app-specific APP_ID
                             systemd's app-specific machine ID
  version                    the library's version
"""


def _id_object(info, **extra):
    return dict(extra, id=info.id, source=info.source, device_changed=info.device_changed, weak=info.weak,
                limited=info.limited, file_only=info.file_only, repaired=info.repaired, mirrored=info.mirrored,
                provisional=info.provisional)


def _run(words, as_json):
    def say(text, **fields):
        print(json.dumps(fields, separators=(",", ":")) if as_json else text)

    w = tuple(words)
    if len(w) == 2 and w[0] == "get":
        info = deviceid.get_info(w[1])
        say(info.id, **_id_object(info, app_id=w[1]))
    elif len(w) == 2 and w[0] == "reset":
        deviceid.reset(w[1])
        if as_json:
            say("", app_id=w[1], reset=True)
    elif len(w) == 3 and w[:2] == ("vendor", "get"):
        info = deviceid.identifier("vendor", w[2])
        say(info.id, **_id_object(info, vendor_id=w[2]))
    elif len(w) == 3 and w[:2] == ("vendor", "reset"):
        deviceid.reset_vendor_id(w[2])
        if as_json:
            say("", vendor_id=w[2], reset=True)
    elif w in (("advertising",), ("advertising", "get")):
        info = deviceid.identifier("advertising")
        say(info.id, **_id_object(info))
    elif w == ("advertising", "reset"):
        deviceid.reset_advertising_id()
        if as_json:
            say("", reset=True)
    elif len(w) == 3 and w[:2] == ("openudid", "get"):
        info = deviceid.identifier("openudid", w[2])
        say(info.id, **_id_object(info, app_id=w[2]))
    elif w == ("uuid",):
        value = deviceid.uuid4()
        say(value, uuid=value)
    elif len(w) == 3 and w[:2] == ("machine-id", "app-specific"):
        value = deviceid.machine_app_specific(w[2])
        say(value, id=value)
    elif w == ("version",):
        say(f"deviceid {deviceid.__version__}", version=deviceid.__version__)
    elif w in (("help",), ()):
        print(USAGE, end="")
    else:
        return None
    return 0


def main(argv=None):
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    words = [a for a in args if a != "--json"]
    if words and words[0] in ("-h", "--help"):
        words = ["help"]
    try:
        status = _run(words, as_json)
    except deviceid.DeviceIDError as error:
        if as_json:
            print(json.dumps({"error": {"status": error.status, "name": error.name, "message": str(error)}}),
                  file=sys.stderr)
        else:
            print(f"deviceid: {error}", file=sys.stderr)
        return 1 if error.status == -3 else 10 - error.status
    if status is None:
        message = f"unknown command or arguments: {' '.join(words)}"
        if as_json:
            print(json.dumps({"error": {"name": "USAGE", "message": message, "help": "python -m deviceid --help"}}),
                  file=sys.stderr)
        else:
            print(f"deviceid: {message}\nTry 'python -m deviceid --help'.", file=sys.stderr)
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
