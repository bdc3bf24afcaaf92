"""DeviceIDError and one subclass per status of include/deviceid.h, with the same names. The numbers
and texts come from the one table of statuses (Sources/CDeviceIDAPI/statuses.tsv, through _c); only
the Python names and base classes are chosen here."""
from __future__ import annotations

from . import _c


class DeviceIDError(Exception):
    """A DeviceID call failed. `status` is the negative C status, `name` its symbolic name."""

    status: int = 0
    name: str = "UNKNOWN"

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        if status:
            self.status = status


class InvalidArgumentError(DeviceIDError, ValueError):
    name = "INVALID_ARGUMENT"


class BufferTooSmallError(DeviceIDError):
    name = "BUFFER_TOO_SMALL"


class NotFoundError(DeviceIDError, LookupError):
    name = "NOT_FOUND"


class LockedError(DeviceIDError):
    name = "LOCKED"


class UnavailableError(DeviceIDError):
    name = "UNAVAILABLE"


class TimedOutError(DeviceIDError, TimeoutError):
    name = "TIMED_OUT"


class CorruptError(DeviceIDError):
    name = "CORRUPT"


class IOFailureError(DeviceIDError, OSError):
    name = "IO"


class PermissionDeniedError(DeviceIDError, PermissionError):
    name = "PERMISSION"


class NoMemoryError(DeviceIDError, MemoryError):
    name = "NO_MEMORY"


class TooLargeError(DeviceIDError, ValueError):
    name = "TOO_LARGE"


class UnsupportedError(DeviceIDError):
    name = "UNSUPPORTED"


class KeyringError(DeviceIDError):
    name = "KEYRING"


class OptedOutError(DeviceIDError):
    name = "OPTED_OUT"


class InternalError(DeviceIDError):
    name = "INTERNAL"


class InvalidMachineIDError(DeviceIDError):
    name = "INVALID_MACHINE_ID"


class NoCollectionError(DeviceIDError):
    name = "NO_COLLECTION"


class NoKeyringError(DeviceIDError):
    name = "NO_KEYRING"


class CopiedError(DeviceIDError):
    name = "COPIED"


_CLASSES = {cls.name: cls for cls in (
    InvalidArgumentError, BufferTooSmallError, NotFoundError, LockedError, UnavailableError,
    TimedOutError, CorruptError, IOFailureError, PermissionDeniedError, NoMemoryError,
    TooLargeError, UnsupportedError, KeyringError, OptedOutError, InternalError,
    InvalidMachineIDError, NoCollectionError, NoKeyringError, CopiedError,
)}
BY_STATUS: dict[int, type[DeviceIDError]] = {}
#: A TPM call's failure in words about a TPM ("TPM unavailable"), where they differ from the store's.
TPM_SUMMARIES: dict[int, str] = {}
for _number, _name, _summary, _meaning, _tpm in _c.STATUSES:
    # A status without a class here is a status this binding does not know: a test (test_binding)
    # fails on the table growing without a class.
    _cls = _CLASSES[_name]
    _cls.status, _cls.__doc__ = _number, _meaning
    BY_STATUS[_number] = _cls
    TPM_SUMMARIES[_number] = _tpm
del _number, _name, _summary, _meaning, _tpm, _cls

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
