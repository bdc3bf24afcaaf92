"""The operations a process-wide call and a Client share: one implementation each, with the
context they run in (None: the process-wide configuration, as a NULL deviceid_context)."""
from __future__ import annotations

import ctypes

from . import _c, _native
from ._errors import InvalidArgumentError, NotFoundError, error_for
from ._records import Backend, Binding, Environment, Protection, Scope, StableID

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

UUID_STRING_MAX = _c.UUID_STRING_MAX
BACKEND_NUMBERS = {"auto": _c.BACKEND_AUTO, "secret-service": _c.BACKEND_SECRET_SERVICE, "file": _c.BACKEND_FILE}
PROTECTION_NUMBERS: dict[Protection, int] = {"portable": _c.PROTECTION_PORTABLE,
                                              "this-device-only": _c.PROTECTION_THIS_DEVICE_ONLY,
                                              "this-device-only+pcr7": _c.PROTECTION_THIS_DEVICE_ONLY_PCR7}
SCOPE_NUMBERS = {"app": _c.SCOPE_APP, "vendor": _c.SCOPE_VENDOR, "advertising": _c.SCOPE_ADVERTISING,
                 "openudid": _c.SCOPE_OPENUDID}


def text(value: str, what: str) -> bytes:
    """A name for the C ABI: str only, UTF-8, no NUL (which would cut the C string short)."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be str, not {type(value).__name__}")
    if "\0" in value:
        raise InvalidArgumentError(f"invalid argument: {what} contains a NUL character")
    return value.encode("utf-8", "surrogatepass")


def octets(value: bytes | bytearray | memoryview, what: str) -> bytes:
    """Bytes for the C ABI, copied: any bytes-like object (bytes, bytearray, memoryview, array,
    mmap, a ctypes buffer), never a number (bytes(5) would be five zero bytes) or text."""
    if isinstance(value, str):
        raise TypeError(f"{what} must be bytes; encode text explicitly ({what}.encode())")
    try:
        return memoryview(value).tobytes()
    except TypeError:
        raise TypeError(f"{what} must be bytes-like, not {type(value).__name__}") from None


def scope_number(scope: Scope) -> int:
    if scope not in SCOPE_NUMBERS:
        raise InvalidArgumentError(f"invalid argument: scope must be one of {', '.join(SCOPE_NUMBERS)}")
    return SCOPE_NUMBERS[scope]


def backend_number(backend: Backend) -> int:
    if backend not in BACKEND_NUMBERS:
        raise InvalidArgumentError(f"invalid argument: backend must be one of {', '.join(BACKEND_NUMBERS)}")
    return BACKEND_NUMBERS[backend]


_BACKENDS: tuple[Backend, ...] = ("auto", "secret-service", "file")


def backend_name(number: int) -> Backend:
    return next(name for name in _BACKENDS if BACKEND_NUMBERS[name] == number)


def protection_number(protection: Protection) -> int:
    if protection not in PROTECTION_NUMBERS:
        raise InvalidArgumentError(
            f"invalid argument: protection must be one of {', '.join(PROTECTION_NUMBERS)}")
    return PROTECTION_NUMBERS[protection]


def get_protection(context: object) -> Protection:
    number = int(_native.get_protection(context))
    return next(name for name, value in PROTECTION_NUMBERS.items() if value == number)


def milliseconds(seconds: float, what: str = "timeout") -> int:
    """Seconds, as the standard library takes them, to the C ABI's whole milliseconds (rounded up,
    so that a deadline is never shorter than asked); the library says which values it accepts."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds <= 4_294_967.295:
        raise InvalidArgumentError(f"invalid argument: {what} must be a number of seconds over 0, not {seconds!r}")
    whole = int(seconds * 1000)
    return whole + 1 if whole < seconds * 1000 else whole


def unsigned(value: int, what: str) -> int:
    """An int that fits the C unsigned int; the library itself says which values it accepts."""
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 0xFFFF_FFFF:
        raise InvalidArgumentError(f"invalid argument: {what} must be a whole number the library accepts")
    return value


def identifier(context: object, scope: Scope, name: str | None) -> StableID:
    number = scope_number(scope)
    out = ctypes.create_string_buffer(UUID_STRING_MAX)
    source = ctypes.c_int(0)
    flags = ctypes.c_uint(0)
    raw_name = None if name is None else text(name, "name")
    _native.identifier(context, number, raw_name, out, len(out), ctypes.byref(source), ctypes.byref(flags))
    bits = flags.value
    file_only = bool(bits & _c.FLAG_FILE_ONLY)
    keyring_error = _native.last_error().decode("utf-8", "replace") if file_only else None
    location = _native.identifier_location(context, number, raw_name)
    return StableID(out.value.decode("ascii"), _native.source_name(source.value).decode("ascii"),
                    bool(bits & _c.FLAG_DEVICE_CHANGED), bool(bits & _c.FLAG_WEAK), bool(bits & _c.FLAG_LIMITED),
                    file_only, keyring_error, bool(bits & _c.FLAG_REPAIRED), bool(bits & _c.FLAG_MIRRORED),
                    bool(bits & _c.FLAG_PROVISIONAL), bool(bits & _c.FLAG_APP_DATA_ONLY),
                    _native.location_name(location).decode("ascii"), bool(bits & _c.FLAG_ANCHOR_CHANGED))


def configure(context: object, backend: Backend | None = None, store_dir: str | None = None,
              timeout: float | None = None, interactive: bool | None = None,
              interactive_timeout: float | None = None, protection: Protection | None = None) -> None:
    """Changes the settings given (None: left as they are), each as its setter does."""
    if backend is not None:
        _native.set_backend(context, backend_number(backend))
    if protection is not None:
        _native.set_protection(context, protection_number(protection))
    if store_dir is not None:
        _native.set_store_dir(context, text(store_dir, "store_dir"))
    if timeout is not None:
        _native.set_timeout_ms(context, milliseconds(timeout))
    if interactive is not None or interactive_timeout is not None:
        wait = 0 if interactive_timeout is None else milliseconds(interactive_timeout, "interactive_timeout")
        on = get_interactive(context) if interactive is None else interactive
        _native.set_interactive(context, 1 if on else 0, wait)


def get_backend(context: object) -> Backend:
    return backend_name(int(_native.get_backend(context)))


def get_interactive(context: object) -> bool:
    return bool(_native.get_interactive(context) == 1)


def get_timeout(context: object) -> float:
    value = ctypes.c_uint(0)
    _native.get_timeout_ms(context, ctypes.byref(value))
    return value.value / 1000


def set_advertising_limited(context: object, limited: bool) -> None:
    _native.set_advertising_limited(context, 1 if limited else 0)


def advertising_limited(context: object) -> bool:
    return bool(_native.get_advertising_limited(context) == 1)


def set_openudid_opt_out(context: object, app_id: str, opt_out: bool) -> None:
    _native.set_openudid_opt_out(context, text(app_id, "app_id"), 1 if opt_out else 0)


def openudid_opted_out(context: object, app_id: str) -> bool:
    return bool(_native.get_openudid_opt_out(context, text(app_id, "app_id")) == 1)


def environment(context: object) -> Environment:
    """One deviceid_environment snapshot, as a record of names."""
    raw = _native.Environment()
    _native.get_environment(context, ctypes.byref(raw), ctypes.sizeof(raw))
    if raw.store_location < 0:
        # The status that kept any store directory from being named (no home).
        summary = _native.strerror(raw.store_location).decode()
        raise error_for(raw.store_location, f"{summary}: no store directory can be named here")
    # The library names each value (its names are the Literal types of the record).
    store = _native.location_name(raw.store_location).decode("ascii")
    stable = _native.location_name(raw.stable_id_location).decode("ascii")
    return Environment(_native.environment_kind_name(raw.kind).decode("ascii"), raw.name.decode("utf-8", "replace"),
                       _native.portal_state_name(raw.portal).decode("ascii"), raw.portal_detail.decode("utf-8", "replace"),
                       raw.machine_id_weak == 1, raw.machine_id_reason.decode("utf-8", "replace"),
                       raw.store_path.decode("utf-8", "surrogateescape"), store, stable,
                       bool(raw.stable_id_survives & _c.SURVIVES_APP_DATA_REMOVAL),
                       bool(raw.stable_id_survives & _c.SURVIVES_CONTAINER_REMOVAL),
                       _PROTECTIONS.get(raw.protection, "portable"), _BINDINGS.get(raw.binding, "none"),
                       raw.binding_detail.decode("utf-8", "replace"))


# The C ABI has no name function for these two (its call budget): the names are the header's.
_PROTECTIONS: dict[int, Protection] = {number: name for name, number in PROTECTION_NUMBERS.items()}
_BINDINGS: dict[int, Binding] = {_c.BINDING_NONE: "none", _c.BINDING_TPM: "tpm", _c.BINDING_REFUSED: "refused",
                                 _c.BINDING_TPM_PCR7: "tpm+pcr7"}


def reset(context: object, scope: Scope, name: str | None) -> None:
    number = scope_number(scope)
    _native.identifier_reset(context, number, None if name is None else text(name, "name"))


def store_secret(context: object, service: str, account: str, secret: bytes | bytearray | memoryview) -> None:
    data = octets(secret, "secret")
    buffer = ctypes.create_string_buffer(data, len(data)) if data else None
    try:
        _native.secret_store(context, text(service, "service"), text(account, "account"), buffer, len(data))
    finally:
        if buffer is not None:
            ctypes.memset(buffer, 0, len(data))


def lookup_secret(context: object, service: str, account: str) -> bytes | None:
    data = ctypes.c_void_p()
    size = ctypes.c_size_t()
    try:
        _native.secret_lookup(context, text(service, "service"), text(account, "account"),
                                      ctypes.byref(data), ctypes.byref(size))
    except NotFoundError:
        return None
    try:
        return ctypes.string_at(data, size.value)
    finally:
        _native.free(data)


def delete_secret(context: object, service: str, account: str) -> bool:
    try:
        _native.secret_delete(context, text(service, "service"), text(account, "account"))
    except NotFoundError:
        return False
    return True


def hardware_id(context: object, app_id: str) -> str:
    out = ctypes.create_string_buffer(UUID_STRING_MAX)
    _native.hardware_id(context, text(app_id, "app id"), out, len(out))
    return out.value.decode("ascii")


def _message(call: Callable[[ctypes.c_void_p], object]) -> str:
    """A wire message the library allocated: copied, then freed."""
    out = ctypes.c_void_p()
    call(out)
    try:
        return ctypes.string_at(out).decode("utf-8")
    finally:
        _native.free(out)


def _wire(message: str | bytes, what: str) -> bytes:
    if isinstance(message, str):
        return text(message, what)
    if isinstance(message, (bytes, bytearray)):
        if b"\0" in message:
            raise InvalidArgumentError(f"invalid argument: {what} contains a NUL byte")
        return bytes(message)
    raise TypeError(f"{what} must be str or bytes, not {type(message).__name__}")


def attest_enrolment(context: object, app_id: str) -> str:
    raw_app = text(app_id, "app id")
    return _message(lambda out: _native.attest_enrolment(context, raw_app, ctypes.byref(out)))


def attest_activate(context: object, app_id: str, challenge: str | bytes) -> str:
    raw_app = text(app_id, "app id")
    raw = _wire(challenge, "challenge")
    return _message(lambda out: _native.attest_activate(context, raw_app, raw, ctypes.byref(out)))


def attest(context: object, app_id: str, nonce: bytes | bytearray | memoryview, ak_certificate: str | bytes | None) -> str:
    data = octets(nonce, "nonce")
    buffer = ctypes.create_string_buffer(data, len(data)) if data else None
    raw_app = text(app_id, "app id")
    certificate = None if ak_certificate is None else _wire(ak_certificate, "ak_certificate")
    return _message(lambda out: _native.attest(context, raw_app, buffer, len(data), certificate, ctypes.byref(out)))


def webauthn_attestation(context: object, app_id: str, client_data_hash: bytes | bytearray | memoryview,
                         ak_certificate: str | bytes) -> str:
    data = octets(client_data_hash, "client_data_hash")
    buffer = ctypes.create_string_buffer(data, len(data)) if data else None
    raw_app = text(app_id, "app id")
    certificate = _wire(ak_certificate, "ak_certificate")
    return _message(lambda out: _native.attest_webauthn(context, raw_app, buffer, len(data), certificate,
                                                        ctypes.byref(out)))


def webauthn_assertion(context: object, app_id: str, client_data_hash: bytes | bytearray | memoryview) -> str:
    data = octets(client_data_hash, "client_data_hash")
    buffer = ctypes.create_string_buffer(data, len(data)) if data else None
    raw_app = text(app_id, "app id")
    return _message(lambda out: _native.assertion(context, raw_app, buffer, len(data), ctypes.byref(out)))
