"""Typical uses of the package, type-checked with mypy --strict by scripts/test (not a pytest
module): every record field has its type, names are Literals, a Client is configured per instance."""
from __future__ import annotations

import deviceid


def describe(app: str) -> str:
    info: deviceid.StableID = deviceid.get_info(app)
    source: deviceid.Source = info.source
    flags: list[bool] = [info.device_changed, info.weak, info.file_only, info.mirrored, info.provisional]
    reason: str | None = info.keyring_error
    return f"{info.id} {source} {info.location} {sum(flags)} {reason or ''}"


def configure(backend: deviceid.Backend, directory: str | None) -> deviceid.Client:
    deviceid.set_backend(backend)
    deviceid.set_timeout(2.5)
    deviceid.set_interactive(False)
    return deviceid.Client(backend="file", store_dir=directory, timeout=1.0)


def keep(client: deviceid.Client) -> bytes | None:
    client.store_secret("com.example.service", "token", b"s3cret")
    secret: bytes | None = client.lookup_secret("com.example.service", "token")
    deleted: bool = client.delete_secret("com.example.service", "token")
    return secret if deleted else None


def techniques() -> tuple[str, str, bool]:
    mac: deviceid.MACAddress = deviceid.mac_address()
    digest: str = deviceid.hash_hex(b"abc", "md5")
    environment: deviceid.Environment = deviceid.environment()
    return mac.address, digest, environment.survives_app_data_removal


def handle() -> str:
    try:
        return deviceid.get("com.example.app")
    except deviceid.LockedError as error:
        return f"{error.name} {error.status}"
    except deviceid.DeviceIDError as error:
        return str(error)
