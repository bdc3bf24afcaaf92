"""DeviceIDError and one subclass per status of include/deviceid.h, with the same names."""


class DeviceIDError(Exception):
    """A DeviceID call failed. `status` is the negative C status, `name` its symbolic name."""

    status = 0
    name = "UNKNOWN"

    def __init__(self, message: str, status: int = 0):
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


BY_STATUS = {
    cls.status: cls
    for cls in (
        InvalidArgumentError, BufferTooSmallError, NotFoundError, LockedError, UnavailableError,
        TimedOutError, CorruptError, IOFailureError, PermissionDeniedError, NoMemoryError,
        TooLargeError, UnsupportedError, KeyringError, OptedOutError, InternalError,
        InvalidMachineIDError, NoCollectionError,
    )
}


def error_for(status: int, message: str) -> DeviceIDError:
    cls = BY_STATUS.get(status)
    if cls is None:
        return DeviceIDError(message, status)
    return cls(message)
