"""Finds and loads libdeviceid 1.x: $DEVICEID_LIBRARY, then the copy a platform wheel carries
beside this file, then the soname, then ctypes.util.find_library.

Each is tried only when the one before it failed: find_library runs `ldconfig -p` and the
compiler in subprocesses (≈ 10 ms here), which a process whose library the loader finds need not
pay. A library found but not of this ABI (0.3's libdeviceid.so.1, whose calls take other
arguments) is passed over with the reason, never called.
"""
from __future__ import annotations

import ctypes
import os

SONAME = "libdeviceid.so.2"
MAJOR = "1."


def _of_this_abi(path: str, what: str, tried: list[str]) -> ctypes.CDLL | None:
    try:
        library = ctypes.CDLL(path)
    except OSError as error:
        tried.append(f"{what} {path!r}: {error}")
        return None
    try:
        version = library.deviceid_version
    except AttributeError:
        tried.append(f"{what} {path!r}: not libdeviceid 1.x (no deviceid_version(); 0.3's libdeviceid.so.1?)")
        return None
    version.restype = ctypes.c_char_p
    version.argtypes = []
    text = (version() or b"").decode("ascii", "replace")
    if not text.startswith(MAJOR):
        tried.append(f"{what} {path!r}: libdeviceid {text}, not 1.x")
        return None
    return library


def load() -> ctypes.CDLL:
    tried: list[str] = []
    explicit = os.environ.get("DEVICEID_LIBRARY")
    if explicit and (library := _of_this_abi(explicit, "$DEVICEID_LIBRARY", tried)):
        return library
    bundled = os.path.join(os.path.dirname(os.path.abspath(__file__)), SONAME)
    if os.path.exists(bundled) and (library := _of_this_abi(bundled, "the wheel's own copy", tried)):
        return library
    if library := _of_this_abi(SONAME, "soname", tried):
        return library
    from ctypes import util as ctypes_util

    found = ctypes_util.find_library("deviceid")
    if found:
        if library := _of_this_abi(found, "ctypes.util.find_library('deviceid')", tried):
            return library
    else:
        tried.append("ctypes.util.find_library('deviceid'): not found")
    raise ImportError("cannot load libdeviceid 1.x, the C library this package calls; tried:\n  " + "\n  ".join(tried)
                      + "\nTo fix it, one of: install the library (Debian: apt install libdeviceid2; from the source"
                      " tree: make install), install the platform wheel, which carries it (pip install"
                      " deviceid-*-linux_x86_64.whl), or set DEVICEID_LIBRARY to the path of libdeviceid.so.2."
                      " It needs libsecret-1-0 and libssl3 (or their equivalents) at run time.")
