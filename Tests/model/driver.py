"""One DeviceID operation through the Python binding, its outcome printed as one JSON object:
what Tests/model/test_state_machine.py calls for its "python" and "fork" drivers.

    driver.py [--fork] OP APP        OP: get | reset | limit-get | limit-on | limit-off

--fork: the process first talks to the keyring (a secret lookup, so that GLib's D-Bus is running,
as in a prefork server), then forks, and the child does OP — the path of Python multiprocessing,
gunicorn and celery workers, where DeviceID must use a libdbus connection of its own.
"""
import json
import os
import sys

import deviceid


def outcome(op, app):
    try:
        if op == "get":
            info = deviceid.get_info(app)
            return {"id": info.id, "source": info.source, "provisional": getattr(info, "provisional", False), "mirrored": info.mirrored}
        if op == "reset":
            deviceid.reset(app)
            return {"reset": True}
        if op == "limit-get":
            return {"limited": deviceid.advertising_limited()}
        if op in ("limit-on", "limit-off"):
            deviceid.set_advertising_limited(op == "limit-on")
            return {"limited": op == "limit-on"}
        raise SystemExit(f"driver.py: unknown operation {op}")
    except deviceid.DeviceIDError as error:
        return {"error": error.name, "message": str(error)}


def main():
    args = sys.argv[1:]
    fork = args[:1] == ["--fork"]
    op, app = args[-2:]
    if fork:
        # Through the keyring whatever the backend, so that GLib's D-Bus runs in the parent.
        deviceid.set_backend("auto")
        try:
            deviceid.lookup_secret("com.example.model-warm-up", "parent")
        except deviceid.DeviceIDError:
            pass
        deviceid.set_backend(os.environ.get("DEVICEID_BACKEND", "auto"))
        pid = os.fork()
        if pid:
            _, status = os.waitpid(pid, 0)
            sys.exit(os.waitstatus_to_exitcode(status))
    print(json.dumps(outcome(op, app)), flush=True)
    if fork:
        os._exit(0)


main()
