"""DeviceID for asyncio: every call of the package that may wait on a keyring, the Secret portal or
a TPM, as a coroutine that never blocks the event loop.

    >>> import deviceid.aio
    >>> await deviceid.aio.get("com.example.app")
    '1b4e28ba-2fa1-4d2b-883f-0016d3cca427'

Each call runs the blocking one on a thread of DeviceID's own (a few threads, made on first use
and again in a forked child), never on the loop's default executor, which the application may
have sized for other work. The answers, settings and errors are those of the blocking calls
(deviceid.get(), deviceid.Client.get(), ...): the same exceptions are raised from the await.

A call cannot be interrupted once it has reached the library: cancelling the await returns at
once, and the call itself ends by its deadline (set_timeout(), Client(timeout=...)) on its thread.
The process-wide configuration (set_backend(), set_timeout(), ...) is set with the blocking
functions, which never wait.
"""
from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from _thread import allocate_lock

import deviceid as _blocking

from ._client import Client
from ._core import octets
from ._records import Backend, Environment, Scope, StableID

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, TypeVar

    T = TypeVar("T")

__all__ = [
    "get", "get_info", "identifier", "reset", "reset_identifier", "environment", "machine_id_weak",
    "vendor_id", "reset_vendor_id",
    "advertising_id", "reset_advertising_id", "set_advertising_limited", "advertising_limited", "openudid",
    "set_openudid_opt_out", "openudid_opted_out", "reset_openudid",
    "store_secret", "lookup_secret", "delete_secret", "hardware_id", "attest_enrolment", "attest_activate", "attest",
    "webauthn_attestation", "webauthn_assertion",
    "AsyncClient",
]

#: Threads for DeviceID's calls: enough for a keyring, a portal and a TPM call to wait side by side.
WORKERS = 4

_lock = allocate_lock()
_executor: ThreadPoolExecutor | None = None


def _forget_executor() -> None:
    """In a forked child: the parent's threads are not there, so the next call makes new ones."""
    global _executor, _lock
    _executor, _lock = None, allocate_lock()


os.register_at_fork(after_in_child=_forget_executor)


def _pool() -> ThreadPoolExecutor:
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="deviceid")
        return _executor


async def _run(call: Callable[[], T]) -> T:
    return await asyncio.get_running_loop().run_in_executor(_pool(), call)


async def get(app_id: str) -> str:
    """deviceid.get(): this device's identifier for `app_id`. Raises as it does."""
    return await _run(partial(_blocking.get, app_id))


async def get_info(app_id: str) -> StableID:
    """deviceid.get_info(): as get(), with where the answer came from and its flags. Raises as it does."""
    return await _run(partial(_blocking.get_info, app_id))


async def identifier(scope: Scope, name: str | None = None) -> StableID:
    """deviceid.identifier(): the identifier of a scope. Raises as it does."""
    return await _run(partial(_blocking.identifier, scope, name))


async def reset(app_id: str) -> None:
    """deviceid.reset(): removes the app's identifier from every store. Raises as it does."""
    await _run(partial(_blocking.reset, app_id))


async def reset_identifier(scope: Scope, name: str | None = None) -> None:
    """deviceid.reset_identifier(): forgets the identifier of a scope. Raises as it does."""
    await _run(partial(_blocking.reset_identifier, scope, name))


async def environment() -> Environment:
    """deviceid.environment(): one snapshot of where this process runs. Raises as it does."""
    return await _run(_blocking.environment)


async def machine_id_weak() -> tuple[bool, str]:
    """deviceid.machine_id_weak(), read from the same snapshot. Raises as it does."""
    return await _run(_blocking.machine_id_weak)


async def vendor_id(vendor: str) -> str:
    """deviceid.vendor_id(): identifierForVendor. Raises as it does."""
    return await _run(partial(_blocking.vendor_id, vendor))


async def reset_vendor_id(vendor: str) -> None:
    """deviceid.reset_vendor_id(). Raises as it does."""
    await _run(partial(_blocking.reset_vendor_id, vendor))


async def advertising_id() -> str:
    """deviceid.advertising_id(): the user's advertising ID. Raises as it does."""
    return await _run(_blocking.advertising_id)


async def reset_advertising_id() -> None:
    """deviceid.reset_advertising_id(). Raises as it does."""
    await _run(_blocking.reset_advertising_id)


async def set_advertising_limited(limited: bool) -> None:
    """deviceid.set_advertising_limited(): "limit ad tracking" on or off. Raises as it does."""
    await _run(partial(_blocking.set_advertising_limited, limited))


async def advertising_limited() -> bool:
    """deviceid.advertising_limited(). Raises as it does."""
    return await _run(_blocking.advertising_limited)


async def openudid(app_id: str) -> str:
    """deviceid.openudid(): the ID every app of this user shares. Raises as it does."""
    return await _run(partial(_blocking.openudid, app_id))


async def set_openudid_opt_out(app_id: str, opt_out: bool) -> None:
    """deviceid.set_openudid_opt_out(). Raises as it does."""
    await _run(partial(_blocking.set_openudid_opt_out, app_id, opt_out))


async def openudid_opted_out(app_id: str) -> bool:
    """deviceid.openudid_opted_out(). Raises as it does."""
    return await _run(partial(_blocking.openudid_opted_out, app_id))


async def reset_openudid() -> None:
    """deviceid.reset_openudid(). Raises as it does."""
    await _run(_blocking.reset_openudid)


async def store_secret(service: str, account: str, secret: bytes | bytearray | memoryview) -> None:
    """deviceid.store_secret(). Raises as it does."""
    # Copied now (the caller may change its buffer while the call waits), and checked as the blocking call does.
    await _run(partial(_blocking.store_secret, service, account, octets(secret, "secret")))


async def lookup_secret(service: str, account: str) -> bytes | None:
    """deviceid.lookup_secret(). Raises as it does."""
    return await _run(partial(_blocking.lookup_secret, service, account))


async def delete_secret(service: str, account: str) -> bool:
    """deviceid.delete_secret(). Raises as it does."""
    return await _run(partial(_blocking.delete_secret, service, account))


async def hardware_id(app_id: str) -> str:
    """deviceid.hardware_id(): this TPM's hardware-bound ID for app_id. Raises as it does."""
    return await _run(partial(_blocking.hardware_id, app_id))


async def attest_enrolment(app_id: str) -> str:
    """deviceid.attest_enrolment(). Raises as it does."""
    return await _run(partial(_blocking.attest_enrolment, app_id))


async def attest_activate(app_id: str, challenge: str | bytes) -> str:
    """deviceid.attest_activate(). Raises as it does."""
    return await _run(partial(_blocking.attest_activate, app_id, challenge))


async def attest(app_id: str, nonce: bytes | bytearray | memoryview, ak_certificate: str | bytes | None = None) -> str:
    """deviceid.attest(). Raises as it does."""
    return await _run(partial(_blocking.attest, app_id, octets(nonce, "nonce"), ak_certificate))


async def webauthn_attestation(app_id: str, client_data_hash: bytes | bytearray | memoryview,
                               ak_certificate: str | bytes) -> str:
    """deviceid.webauthn_attestation(). Raises as it does."""
    return await _run(partial(_blocking.webauthn_attestation, app_id, octets(client_data_hash, "client_data_hash"),
                              ak_certificate))


async def webauthn_assertion(app_id: str, client_data_hash: bytes | bytearray | memoryview) -> str:
    """deviceid.webauthn_assertion(). Raises as it does."""
    return await _run(partial(_blocking.webauthn_assertion, app_id, octets(client_data_hash, "client_data_hash")))


class AsyncClient:
    """A deviceid.Client whose calls are coroutines: the same configuration, answers and errors.

        >>> async with deviceid.aio.AsyncClient(backend="file", store_dir="/var/lib/example/ids") as ids:
        ...     await ids.get("com.example.app")

    Made and configured without waiting (nothing is asked until a call); `client` is the blocking
    Client underneath, for its properties (backend, interactive, timeout).
    """

    def __init__(self, backend: Backend | None = None, store_dir: str | None = None, timeout: float | None = None,
                 interactive: bool | None = None, interactive_timeout: float | None = None) -> None:
        self.client = Client(backend, store_dir, timeout, interactive, interactive_timeout)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Client.close(): releases the context once the calls running now return."""
        self.client.close()

    def __repr__(self) -> str:
        return repr(self.client).replace("deviceid.Client", "deviceid.aio.AsyncClient", 1)

    async def get(self, app_id: str) -> str:
        """Client.get(). Raises as it does."""
        return await _run(partial(self.client.get, app_id))

    async def get_info(self, app_id: str) -> StableID:
        """Client.get_info(). Raises as it does."""
        return await _run(partial(self.client.get_info, app_id))

    async def identifier(self, scope: Scope, name: str | None = None) -> StableID:
        """Client.identifier(). Raises as it does."""
        return await _run(partial(self.client.identifier, scope, name))

    async def reset(self, app_id: str) -> None:
        """Client.reset(). Raises as it does."""
        await _run(partial(self.client.reset, app_id))

    async def reset_identifier(self, scope: Scope, name: str | None = None) -> None:
        """Client.reset_identifier(). Raises as it does."""
        await _run(partial(self.client.reset_identifier, scope, name))

    async def environment(self) -> Environment:
        """Client.environment(). Raises as it does."""
        return await _run(self.client.environment)

    async def vendor_id(self, vendor: str) -> str:
        """Client.vendor_id(). Raises as it does."""
        return await _run(partial(self.client.vendor_id, vendor))

    async def reset_vendor_id(self, vendor: str) -> None:
        """Client.reset_vendor_id(). Raises as it does."""
        await _run(partial(self.client.reset_vendor_id, vendor))

    async def advertising_id(self) -> str:
        """Client.advertising_id(). Raises as it does."""
        return await _run(self.client.advertising_id)

    async def reset_advertising_id(self) -> None:
        """Client.reset_advertising_id(). Raises as it does."""
        await _run(self.client.reset_advertising_id)

    async def set_advertising_limited(self, limited: bool) -> None:
        """Client.set_advertising_limited(). Raises as it does."""
        await _run(partial(self.client.set_advertising_limited, limited))

    async def advertising_limited(self) -> bool:
        """Client.advertising_limited(). Raises as it does."""
        return await _run(self.client.advertising_limited)

    async def openudid(self, app_id: str) -> str:
        """Client.openudid(). Raises as it does."""
        return await _run(partial(self.client.openudid, app_id))

    async def set_openudid_opt_out(self, app_id: str, opt_out: bool) -> None:
        """Client.set_openudid_opt_out(). Raises as it does."""
        await _run(partial(self.client.set_openudid_opt_out, app_id, opt_out))

    async def openudid_opted_out(self, app_id: str) -> bool:
        """Client.openudid_opted_out(). Raises as it does."""
        return await _run(partial(self.client.openudid_opted_out, app_id))

    async def reset_openudid(self) -> None:
        """Client.reset_openudid(). Raises as it does."""
        await _run(self.client.reset_openudid)

    async def store_secret(self, service: str, account: str, secret: bytes | bytearray | memoryview) -> None:
        """Client.store_secret(). Raises as it does."""
        await _run(partial(self.client.store_secret, service, account, octets(secret, "secret")))

    async def lookup_secret(self, service: str, account: str) -> bytes | None:
        """Client.lookup_secret(). Raises as it does."""
        return await _run(partial(self.client.lookup_secret, service, account))

    async def delete_secret(self, service: str, account: str) -> bool:
        """Client.delete_secret(). Raises as it does."""
        return await _run(partial(self.client.delete_secret, service, account))

    async def hardware_id(self, app_id: str) -> str:
        """Client.hardware_id(). Raises as it does."""
        return await _run(partial(self.client.hardware_id, app_id))

    async def attest_enrolment(self, app_id: str) -> str:
        """Client.attest_enrolment(). Raises as it does."""
        return await _run(partial(self.client.attest_enrolment, app_id))

    async def attest_activate(self, app_id: str, challenge: str | bytes) -> str:
        """Client.attest_activate(). Raises as it does."""
        return await _run(partial(self.client.attest_activate, app_id, challenge))

    async def attest(self, app_id: str, nonce: bytes | bytearray | memoryview,
                     ak_certificate: str | bytes | None = None) -> str:
        """Client.attest(). Raises as it does."""
        return await _run(partial(self.client.attest, app_id, octets(nonce, "nonce"), ak_certificate))

    async def webauthn_attestation(self, app_id: str, client_data_hash: bytes | bytearray | memoryview,
                                   ak_certificate: str | bytes) -> str:
        """Client.webauthn_attestation(). Raises as it does."""
        return await _run(partial(self.client.webauthn_attestation, app_id,
                                  octets(client_data_hash, "client_data_hash"), ak_certificate))

    async def webauthn_assertion(self, app_id: str, client_data_hash: bytes | bytearray | memoryview) -> str:
        """Client.webauthn_assertion(). Raises as it does."""
        return await _run(partial(self.client.webauthn_assertion, app_id, octets(client_data_hash, "client_data_hash")))
