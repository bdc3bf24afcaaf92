"""Finds and loads libdeviceid: $DEVICEID_LIBRARY, then ctypes.util.find_library, then the soname."""

import ctypes
import ctypes.util
import os

SONAME = "libdeviceid.so.1"


def load() -> ctypes.CDLL:
    tried = []
    candidates = []
    explicit = os.environ.get("DEVICEID_LIBRARY")
    if explicit:
        candidates.append(("$DEVICEID_LIBRARY", explicit))
    found = ctypes.util.find_library("deviceid")
    if found:
        candidates.append(("ctypes.util.find_library('deviceid')", found))
    else:
        tried.append("ctypes.util.find_library('deviceid'): not found")
    candidates.append(("soname", SONAME))
    for how, name in candidates:
        try:
            return ctypes.CDLL(name)
        except OSError as error:
            tried.append(f"{how} {name!r}: {error}")
    raise ImportError("cannot load libdeviceid; tried:\n  " + "\n  ".join(tried))
