"""DeviceID: a stable, private identifier for this device, kept in the user's keyring.

    >>> import deviceid
    >>> deviceid.get("com.example.app")
    '1b4e28ba-2fa1-4d2b-883f-0016d3cca427'

The same value as the C library, the Swift module and the `deviceid` command return for the same
app id and user. The module's functions use one process-wide configuration (set_backend(),
set_store_dir(), set_timeout(), set_interactive(), or the DEVICEID_* environment variables); a
Client has one of its own. Errors are DeviceIDError subclasses named after the C statuses
(deviceid.LockedError, deviceid.NotFoundError, ...). `python -m deviceid` is the deviceid command.
"""

from __future__ import annotations  # annotations stay strings: no `typing` import (4-8 ms; see _records)

import ctypes as _ctypes
import _thread

from . import _c, _core, _native
from ._client import Client
from ._errors import (
    BufferTooSmallError, CopiedError, CorruptError, DeviceIDError, InternalError, InvalidArgumentError,
    InvalidMachineIDError, IOFailureError, KeyringError, LockedError, NoCollectionError, NoKeyringError, NoMemoryError,
    NotFoundError, OptedOutError,
    PermissionDeniedError, TimedOutError, TooLargeError, UnavailableError, UnsupportedError,
)
from ._records import (
    Algorithm, Backend, Environment, EnvironmentKind, Location, MACAddress, PortalState, Protection, Scope, Source,
    StableID,
)

__version__: str = _native.version().decode()
del annotations  # the __future__ import's name is not API

__all__ = [
    # identifiers
    "get", "get_info", "identifier", "reset", "reset_identifier", "vendor_id", "reset_vendor_id", "advertising_id",
    "reset_advertising_id", "set_advertising_limited", "advertising_limited", "openudid", "set_openudid_opt_out",
    "openudid_opted_out", "reset_openudid", "StableID", "Scope", "Source", "Location", "SCOPES",
    # a configuration of the caller's own
    "Client",
    # where the process runs, and where IDs live there
    "environment", "Environment", "EnvironmentKind", "PortalState",
    # the hardware-bound ID (TPM 2.0) and its attestation
    "hardware_id", "attest_enrolment", "attest_activate", "attest", "webauthn_attestation", "webauthn_assertion",
    # keychain-style secrets
    "store_secret", "lookup_secret", "delete_secret", "SECRET_MAX",
    # the iOS-era techniques
    "uuid4", "parse_uuid", "mac_address", "mac_md5", "MACAddress", "hash_hex", "token_hash", "Algorithm",
    "machine_app_specific", "machine_id_raw", "machine_id_weak", "product_uuid_raw", "NULL_UUID",
    # the process-wide configuration, and statuses
    "set_backend", "get_backend", "Backend", "BACKENDS", "set_protection", "get_protection", "Protection",
    "set_timeout", "get_timeout", "set_timeout_ms",
    "set_interactive",    "get_interactive", "set_store_dir", "strerror", "status_name", "NAME_MAX",
    # errors
    "DeviceIDError", "InvalidArgumentError", "BufferTooSmallError", "NotFoundError", "LockedError",
    "UnavailableError", "TimedOutError", "CorruptError", "IOFailureError", "PermissionDeniedError",
    "UnsupportedError", "KeyringError", "OptedOutError", "NoMemoryError", "InvalidMachineIDError", "TooLargeError",
    "InternalError", "NoCollectionError", "NoKeyringError", "CopiedError",
]

#: The longest name (app id, vendor id, service, account) in UTF-8 bytes, plus one.
NAME_MAX: int = _c.NAME_MAX
#: The largest secret store_secret() accepts, in bytes.
SECRET_MAX: int = _c.SECRET_MAX
#: The all-zero UUID: the advertising ID while tracking is limited.
NULL_UUID = "00000000-0000-0000-0000-000000000000"
#: The backends set_backend() and Client take.
BACKENDS: tuple[Backend, ...] = _core._BACKENDS
#: The scopes identifier() takes.
SCOPES: tuple[Scope, ...] = ("app", "vendor", "advertising", "openudid")

_UUID_STRING_MAX = _core.UUID_STRING_MAX
_UUID_STRING_SIZE = _ctypes.c_size_t(_UUID_STRING_MAX)
# threading.local, without importing threading (older typeshed does not declare _thread._local).
_per_thread = getattr(_thread, "_local")()
# App ids get() has checked and encoded, by the exact str (not a subclass, whose __eq__ and
# __hash__ could be anything); emptied when it reaches _ENCODED_MAX, so it stays small.
_encoded: dict[str, bytes] = {}
_ENCODED_MAX = 64


def _encode_app_id(app_id: str) -> bytes:
    name = _core.text(app_id, "app_id")
    if type(app_id) is str:
        if len(_encoded) >= _ENCODED_MAX:
            _encoded.clear()
        _encoded[app_id] = name
    return name


def get(app_id: str) -> str:
    """This device's identifier for `app_id` (a canonical lowercase UUID): the same in every
    process and language, across restarts and reinstalls, until reset(app_id).

    Raises InvalidArgumentError for a bad name; LockedError, TimedOutError, UnavailableError,
    NoCollectionError, KeyringError, CorruptError, IOFailureError or PermissionDeniedError when a
    store that may hold the ID cannot answer (nothing is minted then).
    """
    # The hot path: after the first answer the library answers from memory in nanoseconds, so
    # the Python side keeps to one dictionary lookup, one call into a reused per-thread buffer,
    # one decode (6,100 instructions a call where it was 9,000; callgrind, Python 3.11).
    out: _ctypes.Array[_ctypes.c_char]
    try:
        out = _per_thread.out
    except AttributeError:
        out = _per_thread.out = _ctypes.create_string_buffer(_UUID_STRING_MAX)
    name = _encoded.get(app_id) if type(app_id) is str else None
    if name is None:
        name = _encode_app_id(app_id)
    status = _native.get_unchecked(name, out, _UUID_STRING_SIZE)
    if status:
        _native._check(status, None, None)
    return out.value.decode()


def get_info(app_id: str) -> StableID:
    """As get(), with where the answer came from and its flags.

    Raises InvalidArgumentError for a bad name; LockedError, TimedOutError, UnavailableError,
    NoCollectionError, KeyringError, CorruptError, IOFailureError or PermissionDeniedError when a
    store that may hold the ID cannot answer (nothing is minted then).
    """
    return _core.identifier(None, "app", app_id)


def identifier(scope: Scope, name: str | None = None) -> StableID:
    """The identifier of a scope: "app" (name = app id), "vendor" (vendor id), "advertising"
    (no name) or "openudid" (name = the asking app's id).

    Raises InvalidArgumentError for a bad name; LockedError, TimedOutError, UnavailableError,
    NoCollectionError, KeyringError, CorruptError, IOFailureError or PermissionDeniedError when a
    store that may hold the ID cannot answer (nothing is minted then). OptedOutError for an
    OpenUDID opt-out.
    """
    return _core.identifier(None, scope, name)


def reset(app_id: str) -> None:
    """Removes the app's identifier from every store; the next get() mints a new one.

    Raises InvalidArgumentError, or LockedError, TimedOutError, UnavailableError,
    NoCollectionError, KeyringError, CorruptError, IOFailureError or PermissionDeniedError when a
    store that may hold the ID cannot take the reset (nothing is changed then).
    """
    _core.reset(None, "app", app_id)


def reset_identifier(scope: Scope, name: str | None = None) -> None:
    """Forgets the identifier of a scope (name as for identifier(); ignored for "openudid", whose
    one ID every app shares); the next request mints a new one.

    Raises as reset().
    """
    _core.reset(None, scope, name)


def environment() -> Environment:
    """Where this process runs (host, Flatpak, Snap, container), what the Secret portal said, and
    where identifiers live there. Asks the portal (in a sandbox) and the keyring; writes nothing.

    One snapshot: every field from the same look, so the answer cannot contradict itself.

    Raises InvalidArgumentError for an invalid configuration, PermissionDeniedError where no store
    directory can be named (no home), NoMemoryError; a portal or keyring that fails is reported in
    the answer, not raised.
    """
    return _core.environment(None)


def vendor_id(vendor: str) -> str:
    """identifierForVendor: the same for every app passing the same vendor id.

    Raises InvalidArgumentError for a bad name; LockedError, TimedOutError, UnavailableError,
    NoCollectionError, KeyringError, CorruptError, IOFailureError or PermissionDeniedError when a
    store that may hold the ID cannot answer (nothing is minted then).
    """
    return identifier("vendor", vendor).id


def reset_vendor_id(vendor: str) -> None:
    """Forgets the vendor's identifier ("all the vendor's apps were removed").

    Raises as reset().
    """
    _core.reset(None, "vendor", vendor)


def advertising_id() -> str:
    """The user's advertising ID; all zeros (NULL_UUID) while tracking is limited.

    Raises InvalidArgumentError for a bad name; LockedError, TimedOutError, UnavailableError,
    NoCollectionError, KeyringError, CorruptError, IOFailureError or PermissionDeniedError when a
    store that may hold the ID cannot answer (nothing is minted then).
    """
    return identifier("advertising").id


def reset_advertising_id() -> None:
    """Mints a new advertising ID (hidden too while tracking is limited).

    Raises as reset().
    """
    _core.reset(None, "advertising", None)


def set_advertising_limited(limited: bool) -> None:
    """Turns "limit ad tracking" on or off; persistent, kept like the IDs.

    Raises as reset().
    """
    _core.set_advertising_limited(None, limited)


def advertising_limited() -> bool:
    """Whether advertising tracking is limited.

    Raises as get().
    """
    return _core.advertising_limited(None)


def openudid(app_id: str) -> str:
    """The ID every app of this user shares. Raises OptedOutError for an app that opted out."""
    return identifier("openudid", app_id).id


def set_openudid_opt_out(app_id: str, opt_out: bool) -> None:
    """Opts the app out of OpenUDID, or back in; persistent.

    Raises as reset().
    """
    _core.set_openudid_opt_out(None, app_id, opt_out)


def openudid_opted_out(app_id: str) -> bool:
    """Whether the app opted out of OpenUDID.

    Raises as get().
    """
    return _core.openudid_opted_out(None, app_id)


def reset_openudid() -> None:
    """Forgets the OpenUDID, for every app; the next request mints a new one.

    Raises as reset().
    """
    _core.reset(None, "openudid", None)


def _format(uppercase: bool, compact: bool) -> int:
    return (_c.FORMAT_UPPERCASE if uppercase else 0) | (_c.FORMAT_COMPACT if compact else 0)


def uuid4(uppercase: bool = False, compact: bool = False) -> str:
    """A random UUID v4 from the kernel's CSPRNG.

    Raises NoMemoryError only, or IOFailureError if the kernel's getrandom fails.
    """
    out = _ctypes.create_string_buffer(_UUID_STRING_MAX)
    _native.uuid_generate(out, len(out), _format(uppercase, compact))
    return str(out.value.decode("ascii"))


def parse_uuid(text: str) -> bytes:
    """The 16 bytes of a UUID written with dashes or as 32 hex digits; anything else is refused.

    Raises InvalidArgumentError for anything but a UUID.
    """
    out = _ctypes.create_string_buffer(16)
    _native.uuid_parse(_core.text(text, "text"), out)
    return bytes(out.raw)


def mac_address(interface: str | None = None) -> MACAddress:
    """The primary hardware address (or that of `interface`).

    Raises NotFoundError when no interface qualifies (or `interface` does not exist),
    InvalidArgumentError for a bad name.
    """
    out = _ctypes.create_string_buffer(_c.MAC_STRING_MAX)
    name = _ctypes.create_string_buffer(_c.INTERFACE_NAME_MAX)
    properties = _ctypes.c_uint(0)
    _native.mac_address(None if interface is None else _core.text(interface, "interface"), 0, out, len(out),
                        name, len(name), _ctypes.byref(properties))
    return MACAddress(out.value.decode("ascii"), name.value.decode("utf-8", "replace"),
                      bool(properties.value & _c.MAC_PERMANENT), bool(properties.value & _c.MAC_WEAK))


def mac_md5(bundle_id: str | None = None, interface: str | None = None) -> str:
    """MD5 hex of the MAC's 12 uppercase hex digits, followed by the bundle id when given.

    Raises as mac_address(), UnsupportedError where MD5 is refused (FIPS mode), UnavailableError
    where libcrypto (OpenSSL 3) is missing.
    """
    out = _ctypes.create_string_buffer(_c.MD5_HEX_MAX)
    _native.mac_md5(None if interface is None else _core.text(interface, "interface"),
                    None if bundle_id is None else _core.text(bundle_id, "bundle_id"), out, len(out), None)
    return str(out.value.decode("ascii"))


def _algorithm(name: Algorithm) -> int:
    numbers = {"md5": _c.HASH_MD5, "sha256": _c.HASH_SHA256}
    if name not in numbers:
        raise InvalidArgumentError("invalid argument: algorithm must be 'md5' or 'sha256'")
    return numbers[name]


def hash_hex(data: bytes | bytearray | memoryview, algorithm: Algorithm = "sha256") -> str:
    """Lowercase hex digest through OpenSSL.

    Raises InvalidArgumentError for an unknown algorithm, UnsupportedError where it is refused (MD5
    in FIPS mode), UnavailableError where libcrypto (OpenSSL 3) is missing.
    """
    data = bytes(data)
    out = _ctypes.create_string_buffer(_c.SHA256_HEX_MAX)
    _native.hash_hex(_algorithm(algorithm), data, len(data), out, len(out))
    return str(out.value.decode("ascii"))


def token_hash(token: bytes | bytearray | memoryview, bundle_id: str, algorithm: Algorithm = "sha256") -> str:
    """hex(H(token + bundle id)): hashing a push token with the app's bundle id.

    Raises as hash_hex().
    """
    token = bytes(token)
    out = _ctypes.create_string_buffer(_c.SHA256_HEX_MAX)
    _native.token_hash(_algorithm(algorithm), token, len(token), _core.text(bundle_id, "bundle_id"), out, len(out))
    return str(out.value.decode("ascii"))


def machine_app_specific(app_id: str, compact: bool = False) -> str:
    """systemd's app-specific machine ID for app_id (a UUID, or any name).

    Raises InvalidArgumentError for a bad app_id, InvalidMachineIDError or IOFailureError when the
    machine ID cannot be read.
    """
    out = _ctypes.create_string_buffer(_UUID_STRING_MAX)
    _native.machine_app_specific(_core.text(app_id, "app_id"), _format(False, compact), out, len(out))
    return str(out.value.decode("ascii"))


def machine_id_weak() -> tuple[bool, str]:
    """Whether the machine ID is weak — not known to be this machine's own (in a container, one
    baked into the image and shared by every container made from it) — and why, in words.

    An unreadable machine ID is weak, and says why. The answer is environment()'s: one snapshot,
    which asks the portal and the keyring too, so it can wait up to the deadline (set_timeout())
    where they are slow, and raises as environment() does (an invalid DEVICEID_* configuration is
    InvalidArgumentError). deviceid.aio.machine_id_weak() waits without blocking an event loop.
    """
    report = environment()
    return report.machine_id_weak, report.machine_id_detail


def machine_id_raw(compact: bool = True) -> str:
    """The RAW machine ID, as in /etc/machine-id. Prefer machine_app_specific().

    Raises InvalidMachineIDError or IOFailureError when the machine ID cannot be read.
    """
    out = _ctypes.create_string_buffer(_UUID_STRING_MAX)
    _native.machine_id_raw(_format(False, compact), out, len(out))
    return str(out.value.decode("ascii"))


def product_uuid_raw() -> str:
    """The RAW firmware product UUID (usually root only).

    Raises NotFoundError where the firmware has none, PermissionDeniedError where only root may
    read it.
    """
    out = _ctypes.create_string_buffer(_UUID_STRING_MAX)
    _native.product_uuid_raw(0, out, len(out))
    return str(out.value.decode("ascii"))


def hardware_id(app_id: str) -> str:
    """This TPM's hardware-bound ID for app_id (a version-8 UUID): the same on every call and
    after every store, the home directory or the OS is wiped; another, unlinkable one per app id;
    new only when the TPM is cleared or replaced. Stored nowhere. The TPM is /dev/tpmrm0 unless
    DEVICEID_TPM_TCTI names another. Raises UnavailableError without a TPM, PermissionDeniedError
    when the user may not use it (the tss group), LockedError in dictionary-attack lockout."""
    return _core.hardware_id(None, app_id)


def attest_enrolment(app_id: str) -> str:
    """app_id's enrolment request for the attestation CA (wire format v1, JSON): the
    certificates of the TPM's EKs (or, from a TPM that keeps none in NV, its EK's public area,
    for a CA given the certificate out of band) and the app's own attestation key. Send it to the
    CA only; deviceid_verifier.PrivacyCA answers it (and chooses the EK).

    Raises UnavailableError with no TPM, PermissionDeniedError where the user may not use it,
    TimedOutError, LockedError in dictionary-attack lockout, IOFailureError for a TPM error,
    UnsupportedError when its only EK certificates are of EKs it makes from a template in NV.
    """
    return _core.attest_enrolment(None, app_id)


def attest_activate(app_id: str, challenge: str | bytes) -> str:
    """The response to the CA's enrolment challenge for app_id (TPM2_ActivateCredential), as
    JSON. The CA then returns an AK certificate message, to keep and pass to attest().

    Raises UnavailableError with no TPM, PermissionDeniedError where the user may not use it,
    TimedOutError, LockedError in dictionary-attack lockout, IOFailureError for a TPM error.
    InvalidArgumentError for a malformed challenge.
    """
    return _core.attest_activate(None, app_id, challenge)


def attest(app_id: str, nonce: bytes | bytearray | memoryview, ak_certificate: str | bytes | None = None) -> str:
    """Evidence for app_id's server (JSON): TPM2_Certify of the app's key over the server's nonce
    (1 to 64 bytes), with the CA's AK certificate message when given. The server checks it with
    deviceid_verifier.Verifier; its "hardware_id" is hardware_id(app_id).

    Raises UnavailableError with no TPM, PermissionDeniedError where the user may not use it,
    TimedOutError, LockedError in dictionary-attack lockout, IOFailureError for a TPM error.
    InvalidArgumentError for a malformed nonce or certificate.
    """
    return _core.attest(None, app_id, nonce, ak_certificate)


def webauthn_attestation(app_id: str, client_data_hash: bytes | bytearray | memoryview,
                         ak_certificate: str | bytes) -> str:
    """App Attest for Linux, once: the WebAuthn registration of app_id's credential key (JSON,
    "deviceid.webauthn-attestation"), certified by the app's AK over client_data_hash (the 32-byte
    SHA-256 of the WebAuthn client data around the server's challenge), with the CA's AK
    certificate message. Any WebAuthn verifier registers it for relying party id app_id;
    deviceid_verifier.WebAuthnVerifier too.

    Raises InvalidArgumentError for a hash of another size or a malformed certificate message,
    and as attest() does for the TPM.
    """
    return _core.webauthn_attestation(None, app_id, client_data_hash, ak_certificate)


def webauthn_assertion(app_id: str, client_data_hash: bytes | bytearray | memoryview) -> str:
    """App Attest for Linux, each request: a WebAuthn assertion by app_id's credential key over
    client_data_hash (JSON, "deviceid.webauthn-assertion"), whose counter is the app's counter in
    the TPM, incremented by this call.

    Raises InvalidArgumentError for a hash of another size, NoMemoryError when the TPM has no
    room for the counter, and as attest() does for the TPM.
    """
    return _core.webauthn_assertion(None, app_id, client_data_hash)


def store_secret(service: str, account: str, secret: bytes | bytearray | memoryview) -> None:
    """Stores bytes under service and account (replacing), like secret-tool store. Text is
    encoded by the caller (secret.encode()), so that no encoding is guessed.

    Raises NoKeyringError in auto mode with no keyring to take it (nothing is written: a secret
    goes to a file in plain text only with set_backend("file")), TooLargeError over SECRET_MAX
    bytes, InvalidArgumentError for a bad name, LockedError, TimedOutError, UnavailableError,
    NoCollectionError, KeyringError, CorruptError, IOFailureError or PermissionDeniedError.
    """
    _core.store_secret(None, service, account, secret)


def lookup_secret(service: str, account: str) -> bytes | None:
    """The secret stored under service and account, or None when there is none.

    Raises InvalidArgumentError for a bad name, LockedError, TimedOutError, UnavailableError,
    NoCollectionError, KeyringError, CorruptError, IOFailureError or PermissionDeniedError (never
    None for a store that could not answer).
    """
    return _core.lookup_secret(None, service, account)


def delete_secret(service: str, account: str) -> bool:
    """Deletes the secret; False when there was none.

    Raises as lookup_secret().
    """
    return _core.delete_secret(None, service, account)


def set_backend(backend: Backend) -> None:
    """Chooses "auto", "secret-service" or "file" for this process (overrides DEVICEID_BACKEND).

    Raises InvalidArgumentError for another name.
    """
    _native.set_backend(None, _core.backend_number(backend))


def get_backend() -> Backend:
    """The process-wide backend in force.

    Raises InvalidArgumentError when DEVICEID_BACKEND is invalid.
    """
    return _core.get_backend(None)


def set_protection(protection: Protection) -> None:
    """Chooses what this process writes (overrides DEVICEID_PROTECTION): "portable" (the default:
    records and secrets travel with the home) or "this-device-only" (sealed to this machine's
    TPM: another machine, or this one after tpm2_clear, reads CopiedError, never "none"; without a
    usable TPM, a call that would seal raises the TPM's error and writes nothing) or
    "this-device-only+pcr7" (as this-device-only, and bound to PCR 7, the Secure Boot state: once it
    changes, CopiedError until it returns). Reading does not depend on it. docs/STATE.md,
    "Protection classes".

    Raises InvalidArgumentError for another name.
    """
    _native.set_protection(None, _core.protection_number(protection))


def get_protection() -> Protection:
    """The process-wide protection class in force.

    Raises InvalidArgumentError when DEVICEID_PROTECTION is invalid.
    """
    return _core.get_protection(None)


def set_timeout(seconds: float) -> None:
    """The deadline of each conversation with the Secret Service, in seconds (default 5).

    Raises InvalidArgumentError outside 0 < seconds <= 86400.
    """
    _native.set_timeout_ms(None, _core.milliseconds(seconds))


def get_timeout() -> float:
    """The process-wide deadline in force, in seconds.

    Raises InvalidArgumentError when DEVICEID_TIMEOUT_MS is invalid.
    """
    return _core.get_timeout(None)


def set_timeout_ms(milliseconds: int) -> None:
    """set_timeout() in whole milliseconds, as the C library and DEVICEID_TIMEOUT_MS take it.

    Raises as set_timeout().
    """
    _native.set_timeout_ms(None, _core.unsigned(milliseconds, "milliseconds"))


def set_interactive(interactive: bool, *, timeout: float | None = None) -> None:
    """Interactive mode, for desktop apps: the keyring may show unlock and confirmation dialogs,
    and a call waits up to `timeout` seconds (default 120) for the person. Off by default (or
    DEVICEID_INTERACTIVE=1): then no dialog is ever started. (`timeout` is keyword-only: 0.2
    took milliseconds in that place.)

    Raises InvalidArgumentError for a bad timeout.
    """
    _native.set_interactive(None, 1 if interactive else 0, 0 if timeout is None else _core.milliseconds(timeout))


def get_interactive() -> bool:
    """Whether interactive mode is on for this process.

    Raises InvalidArgumentError when DEVICEID_INTERACTIVE is invalid.
    """
    return _core.get_interactive(None)


def set_store_dir(path: str | None) -> None:
    """The file store's directory (absolute), or None for the default.

    Raises InvalidArgumentError for a relative or over-long path.
    """
    _native.set_store_dir(None, None if path is None else _core.text(path, "path"))


def strerror(status: int) -> str:
    """A one-line English description of a C status ("the keyring is locked").

    Never raises.
    """
    return str(_native.strerror(status).decode())


def status_name(status: int) -> str:
    """The symbolic name of a C status ("LOCKED").

    Never raises.
    """
    return str(_native.status_name(status).decode())
