"""Finds and loads libdeviceid: $DEVICEID_LIBRARY, then the copy a platform wheel carries beside
this file, then ctypes.util.find_library, then the soname.

Each is tried only when the one before it failed: find_library runs `ldconfig -p` in a
subprocess (≈ 10 ms here), which a process that named its library need not pay.
"""

import ctypes
import os

SONAME = "libdeviceid.so.2"


def load() -> ctypes.CDLL:
    tried = []
    explicit = os.environ.get("DEVICEID_LIBRARY")
    if explicit:
        try:
            return ctypes.CDLL(explicit)
        except OSError as error:
            tried.append(f"$DEVICEID_LIBRARY {explicit!r}: {error}")
    bundled = os.path.join(os.path.dirname(os.path.abspath(__file__)), SONAME)
    if os.path.exists(bundled):
        try:
            return ctypes.CDLL(bundled)
        except OSError as error:
            tried.append(f"the wheel's own copy {bundled!r}: {error}")
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
    raise ImportError("cannot load libdeviceid, the C library this package calls; tried:\n  " + "\n  ".join(tried)
                      + "\nTo fix it, one of: install the library (Debian: apt install libdeviceid2; from the source"
                      " tree: make install), install the platform wheel, which carries it (pip install"
                      " deviceid-*-linux_x86_64.whl), or set DEVICEID_LIBRARY to the path of libdeviceid.so.2."
                      " It needs libsecret-1-0 and libssl3 (or their equivalents) at run time.")
