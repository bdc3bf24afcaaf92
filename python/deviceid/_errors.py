"""DeviceIDError and one subclass per status of include/deviceid.h, with the same names."""


class DeviceIDError(Exception):
    """A DeviceID call failed. `status` is the negative C status, `name` its symbolic name."""

    status: int = 0
    name: str = "UNKNOWN"

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        if status:
            self.status = status


class InvalidArgumentError(DeviceIDError, ValueError):
    status, name = -1, "INVALID_ARGUMENT"


class BufferTooSmallError(DeviceIDError):
    status, name = -2, "BUFFER_TOO_SMALL"


class NotFoundError(DeviceIDError, LookupError):
    status, name = -3, "NOT_FOUND"


class LockedError(DeviceIDError):
    status, name = -4, "LOCKED"


class UnavailableError(DeviceIDError):
    status, name = -5, "UNAVAILABLE"


class TimedOutError(DeviceIDError, TimeoutError):
    status, name = -6, "TIMED_OUT"


class CorruptError(DeviceIDError):
    status, name = -7, "CORRUPT"


class IOFailureError(DeviceIDError, OSError):
    status, name = -8, "IO"


class PermissionDeniedError(DeviceIDError, PermissionError):
    status, name = -9, "PERMISSION"


class NoMemoryError(DeviceIDError, MemoryError):
    status, name = -10, "NO_MEMORY"


class TooLargeError(DeviceIDError, ValueError):
    status, name = -11, "TOO_LARGE"


class UnsupportedError(DeviceIDError):
    status, name = -12, "UNSUPPORTED"


class KeyringError(DeviceIDError):
    status, name = -13, "KEYRING"


class OptedOutError(DeviceIDError):
    status, name = -14, "OPTED_OUT"


class InternalError(DeviceIDError):
    status, name = -15, "INTERNAL"


class InvalidMachineIDError(DeviceIDError):
    status, name = -16, "INVALID_MACHINE_ID"


class NoCollectionError(DeviceIDError):
    status, name = -17, "NO_COLLECTION"


class NoKeyringError(DeviceIDError):
    status, name = -18, "NO_KEYRING"


BY_STATUS = {
    cls.status: cls
    for cls in (
        InvalidArgumentError, BufferTooSmallError, NotFoundError, LockedError, UnavailableError,
        TimedOutError, CorruptError, IOFailureError, PermissionDeniedError, NoMemoryError,
        TooLargeError, UnsupportedError, KeyringError, OptedOutError, InternalError,
        InvalidMachineIDError, NoCollectionError, NoKeyringError,
    )
}


_MEANINGS = {
    -1: "An argument or the configuration is invalid: NULL, empty, too long, not UTF-8, control characters.",
    -2: "The answer does not fit the buffer (a binding bug, as Python sizes its buffers).",
    -3: "The store answered: there is no such item.",
    -4: "The keyring is locked; nothing was read, written or minted.",
    -5: "No session bus, Secret Service or usable store is reachable from here.",
    -6: "The store did not answer within the deadline.",
    -7: "Stored data failed validation; it was neither returned nor replaced.",
    -8: "File store I/O failed (disk full, read-only, ...).",
    -9: "An unsafe location (symlink, foreign owner, writable by others), or access denied.",
    -10: "Memory or descriptors ran out (also while loading a library); retry later.",
    -11: "The data is over the size limit (SECRET_MAX for secrets).",
    -12: "Not available here (e.g. MD5 refused in FIPS mode, a reset of a portal-derived ID).",
    -13: "The Secret Service answered with an error.",
    -14: "The app opted out of this identifier.",
    -15: "A bug in DeviceID; please report it.",
    -16: "The machine ID is empty, all zeros or malformed.",
    -17: "The Secret Service has no default collection (no keyring, database or wallet open).",
    -18: ("No keyring can keep the secret here and the file backend was not chosen: nothing was written, "
          "as a secret goes to a file in plain text only where the caller asked for that."),
}
for _cls in BY_STATUS.values():
    _cls.__doc__ = _MEANINGS[_cls.status]
del _cls

# Shown and pickled as deviceid.LockedError, where users import them from, not as this module's.
for _public in (DeviceIDError, *BY_STATUS.values()):
    _public.__module__ = "deviceid"
del _public


def error_for(status: int, message: str) -> DeviceIDError:
    """The exception for a negative C status (DeviceIDError itself for one this version does not know)."""
    cls = BY_STATUS.get(status)
    if cls is None:
        return DeviceIDError(message, status)
    return cls(message)
