"""DeviceID: a stable, private identifier for this device, kept in the user's keyring.

    >>> import deviceid
    >>> deviceid.get("com.example.app")
    '1b4e28ba-2fa1-4d2b-883f-0016d3cca427'

The same value as the C library, the Swift module and the `deviceid` command return for the same
app id and user. Errors are DeviceIDError subclasses named after the C statuses.
"""

from __future__ import annotations  # annotations stay strings: no `typing` import (≈ 8 ms)

import ctypes as _ctypes
from _thread import _local as _ThreadLocal  # threading.local, without importing threading

from . import _native
from ._errors import (  # noqa: F401  (re-exported)
    BufferTooSmallError, CorruptError, DeviceIDError, InternalError, InvalidArgumentError, InvalidMachineIDError,
    IOFailureError, KeyringError, LockedError, NoCollectionError, NoMemoryError, NotFoundError, OptedOutError,
    PermissionDeniedError, TimedOutError, TooLargeError, UnavailableError, UnsupportedError,
)

__version__ = _native.version_string().decode()
del annotations  # the __future__ import's name is not API

__all__ = [
    # identifiers
    "get", "get_info", "identifier", "reset", "vendor_id", "reset_vendor_id", "advertising_id",
    "reset_advertising_id", "set_advertising_limited", "advertising_limited", "openudid", "set_openudid_opt_out",
    "reset_openudid", "StableID",
    # where the process runs, and where IDs live there
    "environment", "Environment",
    # keychain-style secrets
    "store_secret", "lookup_secret", "delete_secret",
    # the iOS-era techniques
    "uuid4", "parse_uuid", "mac_address", "mac_md5", "MACAddress", "hash_hex", "token_hash",
    "machine_app_specific", "machine_id_raw", "machine_id_weak", "product_uuid_raw",
    # configuration and statuses
    "set_backend", "get_backend", "set_timeout_ms", "set_interactive", "get_interactive", "set_store_dir",
    "strerror", "status_name", "BACKENDS", "SCOPES", "NULL_UUID", "UUID_STRING_MAX", "NAME_MAX", "SECRET_MAX",
    "FORMAT_UPPERCASE", "FORMAT_COMPACT", "FLAG_DEVICE_CHANGED", "FLAG_WEAK", "FLAG_LIMITED", "FLAG_FILE_ONLY",
    "FLAG_REPAIRED", "FLAG_MIRRORED", "FLAG_PROVISIONAL", "FLAG_APP_DATA_ONLY",
    # errors
    "DeviceIDError", "InvalidArgumentError", "BufferTooSmallError", "NotFoundError", "LockedError",
    "UnavailableError", "TimedOutError", "CorruptError", "IOFailureError", "PermissionDeniedError",
    "UnsupportedError", "KeyringError", "OptedOutError", "NoMemoryError", "InvalidMachineIDError", "TooLargeError",
    "InternalError", "NoCollectionError",
]

UUID_STRING_MAX = _native.uuid_string_max()
NAME_MAX = _native.name_max()
SECRET_MAX = _native.secret_max()

BACKENDS = {"auto": 0, "secret-service": 1, "file": 2}
# The DEVICEID_FORMAT_* bits of include/deviceid.h (the binding's tests compare them with it).
FORMAT_UPPERCASE, FORMAT_COMPACT = 1, 2


FLAG_DEVICE_CHANGED, FLAG_WEAK, FLAG_LIMITED, FLAG_FILE_ONLY, FLAG_REPAIRED, FLAG_MIRRORED = 1, 2, 4, 8, 16, 32
FLAG_PROVISIONAL, FLAG_APP_DATA_ONLY = 64, 128
# DEVICEID_SURVIVES_* bits of deviceid_location_survives().
_SURVIVES_APP_DATA_REMOVAL, _SURVIVES_CONTAINER_REMOVAL = 1, 2
SCOPES = {"app": 1, "vendor": 2, "advertising": 3, "openudid": 4}
NULL_UUID = "00000000-0000-0000-0000-000000000000"


from collections import namedtuple as _namedtuple  # noqa: E402

StableID = _namedtuple("StableID",
                      "id source device_changed weak limited file_only keyring_error repaired mirrored provisional "
                      "app_data_only location",
                      defaults=(False, False, False, False, None, False, False, False, False, "host"))
StableID.__doc__ = """An identifier, where it came from ("keyring", "file" or "created"), and how far to trust it.

device_changed: it was stored on another machine (cloned image, restored backup).
weak: not known to be unique to this device. limited: advertising tracking is limited.
file_only: the keyring answered but refused or failed to keep the ID (keyring_error says why);
the ID is good, and the next call tries the keyring again. repaired: a corrupt copy in one store
was replaced with the other store's valid one. mirrored: answered by the file mirror, which the
keyring confirmed within the re-check interval, without D-Bus (source is then "keyring").
provisional: kept in the file store while no keyring could be asked and never confirmed by one;
a keyring that later answers with another ID wins (use the file backend where none ever will).
app_data_only: in a Flatpak or Snap, kept only in the app's own data, which removing it removes.
location: where the ID lives — "keyring", "portal" (derived from the Secret portal's secret for
the sandboxed app), "app-data", "host", "container", "volume" or "bind-mount" (README "What
survives what").
"""

Environment = _namedtuple("Environment",
                          "kind name portal portal_detail machine_id_weak machine_id_detail store_path "
                          "store_location stable_id_location survives_app_data_removal survives_container_removal")
Environment.__doc__ = """Where this process runs and what survives what there (deviceid doctor's "environment").

kind: "host", "flatpak", "snap" or "container"; name: the Flatpak app id, the snap's name, the
container manager ("docker", "podman", "systemd-nspawn", ...), "" on a host. portal: "not-asked",
"secret", "absent" or "failed" (portal_detail says why). machine_id_weak: the machine ID is not
known to be this machine's own (a container's, baked into its image); machine_id_detail says why.
store_path, store_location: the file store and where its files live. stable_id_location: where an
app's stable ID is kept here when none is yet; the survives_* flags are for that location.
"""

# The DEVICEID_MAC_* bits of deviceid_mac_address()'s properties (compared with the header too).
_MAC_PERMANENT, _MAC_WEAK = 1, 2

MACAddress = _namedtuple("MACAddress", "address interface permanent weak")
MACAddress.__doc__ = """A hardware address ("AA:BB:CC:DD:EE:FF"), its interface, and whether it is the
permanent address and whether it is weak (locally administered)."""


def _text(value: str, what: str) -> bytes:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be str, not {type(value).__name__}")
    # Encoded explicitly; a NUL would silently cut the C string short, so it is refused here.
    if "\0" in value:
        raise InvalidArgumentError(f"invalid argument: {what} contains a NUL character")
    return value.encode("utf-8", "surrogatepass")


_per_thread = _ThreadLocal()


def get(app_id: str) -> str:
    """This device's identifier for `app_id` (a canonical lowercase UUID)."""
    # The hot path: after the first answer the library answers from memory in nanoseconds, so
    # the Python side keeps to one encode, one call into a reused per-thread buffer, one decode.
    try:
        out = _per_thread.out
    except AttributeError:
        out = _per_thread.out = _ctypes.create_string_buffer(UUID_STRING_MAX)
    status = _native.get_unchecked(_text(app_id, "app_id"), out, UUID_STRING_MAX)
    if status:
        _native._check(status, None, None)
    return out.value.decode("ascii")


def get_info(app_id: str) -> StableID:
    """As get(), with where the answer came from and its flags."""
    return identifier("app", app_id)


def identifier(scope: str, name: str | None = None) -> StableID:
    """The identifier of a scope: "app" (name = app id), "vendor" (vendor id), "advertising"
    (no name) or "openudid" (name = the asking app's id)."""
    if scope not in SCOPES:
        raise InvalidArgumentError(f"invalid argument: scope must be one of {', '.join(SCOPES)}")
    out = _ctypes.create_string_buffer(UUID_STRING_MAX)
    source = _ctypes.c_int(0)
    flags = _ctypes.c_uint(0)
    raw_name = None if name is None else _text(name, "name")
    _native.identifier(SCOPES[scope], raw_name, out, len(out), _ctypes.byref(source), _ctypes.byref(flags))
    file_only = bool(flags.value & FLAG_FILE_ONLY)
    return StableID(out.value.decode("ascii"), _native.source_name(source.value).decode("ascii"),
                    bool(flags.value & FLAG_DEVICE_CHANGED), bool(flags.value & FLAG_WEAK),
                    bool(flags.value & FLAG_LIMITED), file_only,
                    _native.last_error().decode("utf-8", "replace") if file_only else None,
                    bool(flags.value & FLAG_REPAIRED), bool(flags.value & FLAG_MIRRORED),
                    bool(flags.value & FLAG_PROVISIONAL), bool(flags.value & FLAG_APP_DATA_ONLY),
                    _native.location_name(_native.identifier_location(SCOPES[scope], raw_name)).decode("ascii"))


def environment() -> Environment:
    """Where this process runs (host, Flatpak, Snap, container), what the Secret portal said, and
    where identifiers live there. Asks the portal (in a sandbox) and the keyring; writes nothing."""
    name = _ctypes.create_string_buffer(NAME_MAX)
    _native.environment_name(name, len(name))
    reason = _ctypes.create_string_buffer(1024)
    weak = _native.environment_machine_id_weak(reason, len(reason))
    portal = _native.environment_portal()
    portal_detail = _native.last_error().decode("utf-8", "replace")
    path = _ctypes.create_string_buffer(4096)
    store = _native.environment_store_location(path, len(path))
    stable = _native.environment_stable_id_location()
    survives = _native.location_survives(stable)
    return Environment(_native.environment_kind_name(_native.environment_kind()).decode("ascii"),
                       name.value.decode("utf-8", "replace"),
                       _native.portal_state_name(portal).decode("ascii"), portal_detail,
                       weak == 1, reason.value.decode("utf-8", "replace"),
                       path.value.decode("utf-8", "surrogateescape"),
                       _native.location_name(store).decode("ascii"), _native.location_name(stable).decode("ascii"),
                       bool(survives & _SURVIVES_APP_DATA_REMOVAL), bool(survives & _SURVIVES_CONTAINER_REMOVAL))


def vendor_id(vendor: str) -> str:
    """identifierForVendor: the same for every app passing the same vendor id."""
    return identifier("vendor", vendor).id


def reset_vendor_id(vendor: str) -> None:
    _native.vendor_reset(_text(vendor, "vendor"))


def advertising_id() -> str:
    """The user's advertising ID; all zeros while tracking is limited."""
    return identifier("advertising").id


def reset_advertising_id() -> None:
    _native.advertising_reset()


def set_advertising_limited(limited: bool) -> None:
    _native.advertising_set_limited(1 if limited else 0)


def advertising_limited() -> bool:
    return _native.advertising_is_limited() == 1


def openudid(app_id: str) -> str:
    """The ID every app of this user shares. Raises OptedOutError for an app that opted out."""
    return identifier("openudid", app_id).id


def set_openudid_opt_out(app_id: str, opt_out: bool) -> None:
    _native.openudid_set_opt_out(_text(app_id, "app_id"), 1 if opt_out else 0)


def reset_openudid() -> None:
    _native.identifier_reset(SCOPES["openudid"], None)


def _format(uppercase: bool, compact: bool) -> int:
    return (FORMAT_UPPERCASE if uppercase else 0) | (FORMAT_COMPACT if compact else 0)


def uuid4(uppercase: bool = False, compact: bool = False) -> str:
    """A random UUID v4 from the kernel's CSPRNG."""
    out = _ctypes.create_string_buffer(UUID_STRING_MAX)
    _native.uuid_generate(out, len(out), _format(uppercase, compact))
    return out.value.decode("ascii")


def parse_uuid(text: str) -> bytes:
    """The 16 bytes of a UUID written with dashes or as 32 hex digits; anything else is refused."""
    out = _ctypes.create_string_buffer(16)
    _native.uuid_parse(_text(text, "text"), out)
    return out.raw


def mac_address(interface: str | None = None) -> MACAddress:
    """The primary hardware address (or that of `interface`)."""
    out = _ctypes.create_string_buffer(_native.mac_string_max())
    name = _ctypes.create_string_buffer(_native.interface_name_max())
    properties = _ctypes.c_uint(0)
    _native.mac_address(None if interface is None else _text(interface, "interface"), 0, out, len(out),
                        name, len(name), _ctypes.byref(properties))
    return MACAddress(out.value.decode("ascii"), name.value.decode("utf-8", "replace"),
                      bool(properties.value & _MAC_PERMANENT), bool(properties.value & _MAC_WEAK))


def mac_md5(bundle_id: str | None = None, interface: str | None = None) -> str:
    """MD5 hex of the MAC's 12 uppercase hex digits, followed by the bundle id when given."""
    out = _ctypes.create_string_buffer(_native.md5_hex_max())
    _native.mac_md5(None if interface is None else _text(interface, "interface"),
                    None if bundle_id is None else _text(bundle_id, "bundle_id"), out, len(out), None)
    return out.value.decode("ascii")


_ALGORITHMS = {"md5": 1, "sha256": 2}


def _algorithm(name: str) -> int:
    if name not in _ALGORITHMS:
        raise InvalidArgumentError("invalid argument: algorithm must be 'md5' or 'sha256'")
    return _ALGORITHMS[name]


def hash_hex(data: bytes, algorithm: str = "sha256") -> str:
    """Lowercase hex digest through OpenSSL."""
    data = bytes(data)
    out = _ctypes.create_string_buffer(_native.sha256_hex_max())
    _native.hash_hex(_algorithm(algorithm), data, len(data), out, len(out))
    return out.value.decode("ascii")


def token_hash(token: bytes, bundle_id: str, algorithm: str = "sha256") -> str:
    """hex(H(token + bundle id)): hashing a push token with the app's bundle id."""
    token = bytes(token)
    out = _ctypes.create_string_buffer(_native.sha256_hex_max())
    _native.token_hash(_algorithm(algorithm), token, len(token), _text(bundle_id, "bundle_id"), out, len(out))
    return out.value.decode("ascii")


def machine_app_specific(app_id: str, compact: bool = False) -> str:
    """systemd's app-specific machine ID for app_id (a UUID, or any name)."""
    out = _ctypes.create_string_buffer(UUID_STRING_MAX)
    _native.machine_app_specific(_text(app_id, "app_id"), _format(False, compact), out, len(out))
    return out.value.decode("ascii")


def machine_id_weak() -> tuple[bool, str]:
    """Whether the machine ID is weak — not known to be this machine's own (in a container, one
    baked into the image and shared by every container made from it) — and why, in words."""
    reason = _ctypes.create_string_buffer(1024)
    weak = _native.environment_machine_id_weak(reason, len(reason))
    return weak == 1, reason.value.decode("utf-8", "replace")


def machine_id_raw(compact: bool = True) -> str:
    """The RAW machine ID, as in /etc/machine-id. Prefer machine_app_specific()."""
    out = _ctypes.create_string_buffer(UUID_STRING_MAX)
    _native.machine_id_raw(_format(False, compact), out, len(out))
    return out.value.decode("ascii")


def product_uuid_raw() -> str:
    """The RAW firmware product UUID (usually root only)."""
    out = _ctypes.create_string_buffer(UUID_STRING_MAX)
    _native.product_uuid_raw(0, out, len(out))
    return out.value.decode("ascii")


def reset(app_id: str) -> None:
    """Removes the app's identifier from every store; the next get() mints a new one."""
    _native.reset(_text(app_id, "app_id"))


def store_secret(service: str, account: str, secret: bytes) -> None:
    """Stores bytes under service and account (replacing), like secret-tool store."""
    if isinstance(secret, str):
        raise TypeError("secret must be bytes; encode text explicitly")
    data = bytes(secret)
    buffer = _ctypes.create_string_buffer(data, len(data)) if data else None
    try:
        _native.secret_store(_text(service, "service"), _text(account, "account"), buffer, len(data))
    finally:
        if buffer is not None:
            _ctypes.memset(buffer, 0, len(data))


def lookup_secret(service: str, account: str) -> bytes | None:
    """The secret stored under service and account, or None when there is none."""
    data = _ctypes.c_void_p()
    size = _ctypes.c_size_t()
    try:
        _native.secret_lookup(_text(service, "service"), _text(account, "account"),
                              _ctypes.byref(data), _ctypes.byref(size))
    except NotFoundError:
        return None
    try:
        return _ctypes.string_at(data, size.value)
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
    _native.set_timeout_ms(_milliseconds(milliseconds))


def _milliseconds(value: int) -> int:
    """An int that fits the C unsigned int; the library itself says which values it accepts."""
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 0xFFFF_FFFF:
        raise InvalidArgumentError("invalid argument: milliseconds must be a whole number the library accepts")
    return value


def set_interactive(interactive: bool, timeout_ms: int = 0) -> None:
    """Interactive mode, for desktop apps: the keyring may show unlock and confirmation dialogs,
    and a call waits up to timeout_ms (0: 120000) for the person. Off by default (or
    DEVICEID_INTERACTIVE=1): then no dialog is ever started."""
    _native.set_interactive(1 if interactive else 0, _milliseconds(timeout_ms))


def get_interactive() -> bool:
    return _native.get_interactive() == 1


def set_store_dir(path: str | None) -> None:
    """The file store's directory (absolute), or None for the default."""
    _native.set_store_dir(None if path is None else _text(path, "path"))


def strerror(status: int) -> str:
    return _native.strerror(status).decode()


def status_name(status: int) -> str:
    return _native.status_name(status).decode()
