"""Finds and loads libdeviceid: $DEVICEID_LIBRARY, then ctypes.util.find_library, then the soname.

Each is tried only when the one before it failed: find_library runs `ldconfig -p` in a
subprocess (≈ 10 ms here), which a process that named its library need not pay.
"""

import ctypes
import os

SONAME = "libdeviceid.so.1"


def load() -> ctypes.CDLL:
    tried = []
    explicit = os.environ.get("DEVICEID_LIBRARY")
    if explicit:
        try:
            return ctypes.CDLL(explicit)
        except OSError as error:
            tried.append(f"$DEVICEID_LIBRARY {explicit!r}: {error}")
    from ctypes import util as ctypes_util

    found = ctypes_util.find_library("deviceid")
    if found:
        try:
            return ctypes.CDLL(found)
        except OSError as error:
            tried.append(f"ctypes.util.find_library('deviceid') {found!r}: {error}")
    else:
        tried.append("ctypes.util.find_library('deviceid'): not found")
    try:
        return ctypes.CDLL(SONAME)
    except OSError as error:
        tried.append(f"soname {SONAME!r}: {error}")
    raise ImportError("cannot load libdeviceid; tried:\n  " + "\n  ".join(tried))
