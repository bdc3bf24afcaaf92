"""ctypes declarations for every function of include/deviceid.h and include/deviceid-techniques.h;
nothing else declares a C function."""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_char_p, c_int, c_size_t, c_uint, c_void_p

from . import _c, _errors
from ._loader import load

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

lib = load()


def _check(status: int, func: object, args: object) -> int:
    """errcheck for int-returning calls: negative statuses become DeviceIDError subclasses."""
    if status < 0:
        summary = lib.deviceid_strerror(status).decode()
        detail = lib.deviceid_last_error().decode("utf-8", "replace")
        raise _errors.error_for(status, f"{summary}: {detail}" if detail else summary)
    return status


def _check_tpm(status: int, func: object, args: object) -> int:
    """errcheck for the TPM's calls: as _check, in words about a TPM ("TPM unavailable: ..."), as
    the CLI and Swift say it; deviceid_strerror() has one summary per status, about stores."""
    if status < 0:
        summary = _errors.TPM_SUMMARIES.get(status) or lib.deviceid_strerror(status).decode()
        detail = lib.deviceid_last_error().decode("utf-8", "replace")
        raise _errors.error_for(status, f"{summary}: {detail}" if detail else summary)
    return status


def _declare(name: str, restype: Any, argtypes: list[Any], check: bool = False, tpm: bool = False) -> Any:
    func = getattr(lib, name)
    func.restype = restype
    func.argtypes = argtypes
    if check:
        func.errcheck = _check_tpm if tpm else _check
    return func


class Environment(ctypes.Structure):
    """struct deviceid_environment, field for field as include/deviceid.h has it (_c.ENVIRONMENT_FIELDS)."""
    _fields_ = [(name, {"int": c_int, "unsigned int": c_uint}[ctype] if size is None else ctypes.c_char * size)
                for name, ctype, size in _c.ENVIRONMENT_FIELDS]


# The library, statuses, memory.
version = _declare("deviceid_version", c_char_p, [])
strerror = _declare("deviceid_strerror", c_char_p, [c_int])
status_name = _declare("deviceid_status_name", c_char_p, [c_int])
last_error = _declare("deviceid_last_error", c_char_p, [])
free = _declare("deviceid_free", None, [c_void_p])

# The one-call conveniences.
get = _declare("deviceid_get", c_int, [c_char_p, ctypes.c_char_p, c_size_t], check=True)
# The same function for get()'s hot path, which checks the status itself and passes only bytes,
# a c_char array and a c_size_t: ctypes hands those over as char *, char * and size_t on its own,
# so there are no argtypes to convert through (a third of the call's cost: 1,800 of 5,500
# instructions, counted with callgrind). lib[name] makes a separate function object, so the
# declaration above is untouched.
get_unchecked = lib["deviceid_get"]
get_unchecked.restype = c_int
reset = _declare("deviceid_reset", c_int, [c_char_p], check=True)

# Contexts (None: the process-wide configuration) and their configuration.
context_new = _declare("deviceid_context_new", c_int, [POINTER(c_void_p)], check=True)
context_free = _declare("deviceid_context_free", None, [c_void_p])
set_backend = _declare("deviceid_set_backend", c_int, [c_void_p, c_int], check=True)
get_backend = _declare("deviceid_get_backend", c_int, [c_void_p], check=True)
set_timeout_ms = _declare("deviceid_set_timeout_ms", c_int, [c_void_p, c_uint], check=True)
get_timeout_ms = _declare("deviceid_get_timeout_ms", c_int, [c_void_p, POINTER(c_uint)], check=True)
set_store_dir = _declare("deviceid_set_store_dir", c_int, [c_void_p, c_char_p], check=True)
set_interactive = _declare("deviceid_set_interactive", c_int, [c_void_p, c_int, c_uint], check=True)
get_interactive = _declare("deviceid_get_interactive", c_int, [c_void_p], check=True)
set_protection = _declare("deviceid_set_protection", c_int, [c_void_p, c_int], check=True)
get_protection = _declare("deviceid_get_protection", c_int, [c_void_p], check=True)

# Identifiers of every scope, and the settings kept like them.
identifier = _declare("deviceid_identifier", c_int,
                      [c_void_p, c_int, c_char_p, c_char_p, c_size_t, POINTER(c_int), POINTER(c_uint)], check=True)
identifier_reset = _declare("deviceid_identifier_reset", c_int, [c_void_p, c_int, c_char_p], check=True)
identifier_location = _declare("deviceid_identifier_location", c_int, [c_void_p, c_int, c_char_p], check=True)
source_name = _declare("deviceid_source_name", c_char_p, [c_int])
set_advertising_limited = _declare("deviceid_set_advertising_limited", c_int, [c_void_p, c_int], check=True)
get_advertising_limited = _declare("deviceid_get_advertising_limited", c_int, [c_void_p], check=True)
set_openudid_opt_out = _declare("deviceid_set_openudid_opt_out", c_int, [c_void_p, c_char_p, c_int], check=True)
get_openudid_opt_out = _declare("deviceid_get_openudid_opt_out", c_int, [c_void_p, c_char_p], check=True)

# Environment: one snapshot, and the names of its values.
get_environment = _declare("deviceid_get_environment", c_int, [c_void_p, POINTER(Environment), c_size_t], check=True)
environment_kind_name = _declare("deviceid_environment_kind_name", c_char_p, [c_int])
portal_state_name = _declare("deviceid_portal_state_name", c_char_p, [c_int])
location_name = _declare("deviceid_location_name", c_char_p, [c_int])
location_survives = _declare("deviceid_location_survives", c_uint, [c_int])

# Secrets. The looked-up pointer is c_void_p, never c_char_p: it must go back to deviceid_free.
secret_store = _declare("deviceid_secret_store", c_int, [c_void_p, c_char_p, c_char_p, c_void_p, c_size_t], check=True)
secret_lookup = _declare("deviceid_secret_lookup", c_int,
                         [c_void_p, c_char_p, c_char_p, POINTER(c_void_p), POINTER(c_size_t)], check=True)
secret_delete = _declare("deviceid_secret_delete", c_int, [c_void_p, c_char_p, c_char_p], check=True)

# The hardware-bound ID and attestation. Messages come back library-allocated: c_void_p, released
# with deviceid_free.
hardware_id = _declare("deviceid_hardware_id", c_int, [c_void_p, c_char_p, c_char_p, c_size_t], check=True, tpm=True)
attest_enrolment = _declare("deviceid_attest_enrolment", c_int, [c_void_p, c_char_p, POINTER(c_void_p)], check=True, tpm=True)
attest_activate = _declare("deviceid_attest_activate", c_int, [c_void_p, c_char_p, c_char_p, POINTER(c_void_p)],
                           check=True, tpm=True)
attest = _declare("deviceid_attest", c_int, [c_void_p, c_char_p, c_void_p, c_size_t, c_char_p, POINTER(c_void_p)],
                  check=True, tpm=True)
attest_webauthn = _declare("deviceid_attest_webauthn", c_int,
                           [c_void_p, c_char_p, c_void_p, c_size_t, c_char_p, POINTER(c_void_p)], check=True, tpm=True)
assertion = _declare("deviceid_assert", c_int, [c_void_p, c_char_p, c_void_p, c_size_t, POINTER(c_void_p)],
                     check=True, tpm=True)

# The techniques (include/deviceid-techniques.h): no context, no state.
uuid_generate = _declare("deviceid_uuid_generate", c_int, [c_char_p, c_size_t, c_uint], check=True)
uuid_parse = _declare("deviceid_uuid_parse", c_int, [c_char_p, c_char_p], check=True)
uuid_format = _declare("deviceid_uuid_format", c_int, [c_char_p, c_uint, c_char_p, c_size_t], check=True)
mac_address = _declare("deviceid_mac_address", c_int,
                       [c_char_p, c_uint, c_char_p, c_size_t, c_char_p, c_size_t, POINTER(c_uint)], check=True)
mac_md5 = _declare("deviceid_mac_md5", c_int, [c_char_p, c_char_p, c_char_p, c_size_t, POINTER(c_uint)], check=True)
hash_hex = _declare("deviceid_hash_hex", c_int, [c_int, c_void_p, c_size_t, c_char_p, c_size_t], check=True)
token_hash = _declare("deviceid_token_hash", c_int,
                      [c_int, c_void_p, c_size_t, c_char_p, c_char_p, c_size_t], check=True)
machine_app_specific = _declare("deviceid_machine_app_specific", c_int, [c_char_p, c_uint, c_char_p, c_size_t],
                                check=True)
machine_id_raw = _declare("deviceid_machine_id_raw", c_int, [c_uint, c_char_p, c_size_t], check=True)
product_uuid_raw = _declare("deviceid_product_uuid_raw", c_int, [c_uint, c_char_p, c_size_t], check=True)
