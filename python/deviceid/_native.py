"""ctypes declarations for every function of include/deviceid.h; nothing else touches ctypes."""

import ctypes
from ctypes import POINTER, c_char_p, c_int, c_size_t, c_uint, c_void_p

from . import _errors
from ._loader import load

lib = load()


def _check(status, func, args):
    """errcheck for int-returning calls: negative statuses become DeviceIDError subclasses."""
    if status < 0:
        summary = lib.deviceid_strerror(status).decode()
        detail = lib.deviceid_last_error().decode("utf-8", "replace")
        raise _errors.error_for(status, f"{summary}: {detail}" if detail else summary)
    return status


def _declare(name, restype, argtypes, check=False):
    func = getattr(lib, name)
    func.restype = restype
    func.argtypes = argtypes
    if check:
        func.errcheck = _check
    return func


# Constant facts.
version_string = _declare("deviceid_version_string", c_char_p, [])
version_major = _declare("deviceid_version_major", c_int, [])
version_minor = _declare("deviceid_version_minor", c_int, [])
version_patch = _declare("deviceid_version_patch", c_int, [])
uuid_string_max = _declare("deviceid_uuid_string_max", c_size_t, [])
name_max = _declare("deviceid_name_max", c_size_t, [])
secret_max = _declare("deviceid_secret_max", c_size_t, [])
strerror = _declare("deviceid_strerror", c_char_p, [c_int])
status_name = _declare("deviceid_status_name", c_char_p, [c_int])
last_error = _declare("deviceid_last_error", c_char_p, [])
source_name = _declare("deviceid_source_name", c_char_p, [c_int])

# Configuration.
set_backend = _declare("deviceid_set_backend", c_int, [c_int], check=True)
get_backend = _declare("deviceid_get_backend", c_int, [], check=True)
set_timeout_ms = _declare("deviceid_set_timeout_ms", c_int, [c_uint], check=True)
set_store_dir = _declare("deviceid_set_store_dir", c_int, [c_char_p], check=True)

# The stable identifier.
get = _declare("deviceid_get", c_int, [c_char_p, ctypes.c_char_p, c_size_t], check=True)
get_ex = _declare("deviceid_get_ex", c_int, [c_char_p, ctypes.c_char_p, c_size_t, POINTER(c_int)], check=True)
reset = _declare("deviceid_reset", c_int, [c_char_p], check=True)

# Secrets. The looked-up pointer is c_void_p, never c_char_p: it must go back to deviceid_free.
secret_store = _declare("deviceid_secret_store", c_int, [c_char_p, c_char_p, c_void_p, c_size_t], check=True)
secret_lookup = _declare("deviceid_secret_lookup", c_int,
                         [c_char_p, c_char_p, POINTER(c_void_p), POINTER(c_size_t)], check=True)
secret_delete = _declare("deviceid_secret_delete", c_int, [c_char_p, c_char_p], check=True)
free = _declare("deviceid_free", None, [c_void_p])
