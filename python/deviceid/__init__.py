"""DeviceID: a stable, private identifier for this device, kept in the user's keyring.

    >>> import deviceid
    >>> deviceid.get("com.example.app")
    '1b4e28ba-2fa1-4d2b-883f-0016d3cca427'

The same value as the C library, the Swift module and the `deviceid` command return for the same
app id and user. Errors are DeviceIDError subclasses named after the C statuses.
"""

import ctypes
from typing import NamedTuple, Optional

from . import _native
from ._errors import (  # noqa: F401  (re-exported)
    BufferTooSmallError, CorruptError, DeviceIDError, InternalError, InvalidArgumentError,
    IOFailureError, KeyringError, LockedError, NoMemoryError, NotFoundError, OptedOutError,
    PermissionDeniedError, TimedOutError, TooLargeError, UnavailableError, UnsupportedError,
)

__version__ = _native.version_string().decode()

UUID_STRING_MAX = _native.uuid_string_max()
NAME_MAX = _native.name_max()
SECRET_MAX = _native.secret_max()

BACKENDS = {"auto": 0, "secret-service": 1, "file": 2}
SOURCES = {1: "keyring", 2: "file", 3: "created"}


class StableID(NamedTuple):
    """An identifier and where it came from: "keyring", "file" or "created"."""

    id: str
    source: str


def _text(value: str, what: str) -> bytes:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be str, not {type(value).__name__}")
    # Encoded explicitly; a NUL would silently cut the C string short, so it is refused here.
    if "\0" in value:
        raise InvalidArgumentError(f"invalid argument: {what} contains a NUL character")
    return value.encode("utf-8", "surrogatepass")


def get(app_id: str) -> str:
    """This device's identifier for `app_id` (a canonical lowercase UUID)."""
    return get_info(app_id).id


def get_info(app_id: str) -> StableID:
    """As get(), with the source of the answer."""
    out = ctypes.create_string_buffer(UUID_STRING_MAX)
    source = ctypes.c_int(0)
    _native.get_ex(_text(app_id, "app_id"), out, len(out), ctypes.byref(source))
    return StableID(out.value.decode("ascii"), SOURCES.get(source.value, "unknown"))


def reset(app_id: str) -> None:
    """Removes the app's identifier from every store; the next get() mints a new one."""
    _native.reset(_text(app_id, "app_id"))


def store_secret(service: str, account: str, secret: bytes) -> None:
    """Stores bytes under service and account (replacing), like secret-tool store."""
    if isinstance(secret, str):
        raise TypeError("secret must be bytes; encode text explicitly")
    data = bytes(secret)
    buffer = ctypes.create_string_buffer(data, len(data)) if data else None
    try:
        _native.secret_store(_text(service, "service"), _text(account, "account"), buffer, len(data))
    finally:
        if buffer is not None:
            ctypes.memset(buffer, 0, len(data))


def lookup_secret(service: str, account: str) -> Optional[bytes]:
    """The secret stored under service and account, or None when there is none."""
    data = ctypes.c_void_p()
    size = ctypes.c_size_t()
    try:
        _native.secret_lookup(_text(service, "service"), _text(account, "account"),
                              ctypes.byref(data), ctypes.byref(size))
    except NotFoundError:
        return None
    try:
        return ctypes.string_at(data, size.value)
    finally:
        _native.free(data)


def delete_secret(service: str, account: str) -> bool:
    """Deletes the secret; False when there was none."""
    try:
        _native.secret_delete(_text(service, "service"), _text(account, "account"))
    except NotFoundError:
        return False
    return True


def set_backend(backend: str) -> None:
    """Chooses "auto", "secret-service" or "file" for this process (overrides DEVICEID_BACKEND)."""
    if backend not in BACKENDS:
        raise InvalidArgumentError(f"invalid argument: backend must be one of {', '.join(BACKENDS)}")
    _native.set_backend(BACKENDS[backend])


def get_backend() -> str:
    value = _native.get_backend()
    return next(name for name, number in BACKENDS.items() if number == value)


def set_timeout_ms(milliseconds: int) -> None:
    """The deadline of each conversation with the Secret Service."""
    if not isinstance(milliseconds, int) or not 0 < milliseconds <= 86_400_000:
        raise InvalidArgumentError("invalid argument: timeout must be 1 to 86400000 ms")
    _native.set_timeout_ms(milliseconds)


def set_store_dir(path: Optional[str]) -> None:
    """The file store's directory (absolute), or None for the default."""
    _native.set_store_dir(None if path is None else _text(path, "path"))


def strerror(status: int) -> str:
    return _native.strerror(status).decode()


def status_name(status: int) -> str:
    return _native.status_name(status).decode()
