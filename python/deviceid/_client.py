"""Client: DeviceID with a configuration of its own (a deviceid_context of the C library)."""
from __future__ import annotations

import ctypes
from _thread import allocate_lock

from . import _core, _native
from ._errors import DeviceIDError
from ._records import Backend, Environment, Protection, Scope, StableID

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, NoReturn, TypeVar

    T = TypeVar("T")


class Client:
    """DeviceID with its own backend, store directory, deadline and interactive mode, and its own
    cache of answers, beside the process-wide configuration the module's functions use:

        >>> ids = deviceid.Client(backend="file", store_dir="/var/lib/example/ids", timeout=2.0)
        >>> ids.get("com.example.app")
        '1b4e28ba-2fa1-4d2b-883f-0016d3cca427'

    Settings not given come from the environment (DEVICEID_BACKEND, DEVICEID_TIMEOUT_MS,
    DEVICEID_STORE_DIR, DEVICEID_INTERACTIVE), as for the process-wide configuration. `timeout`
    is the deadline of each conversation with the Secret Service, in seconds; `interactive_timeout`
    how long an interactive call waits for the person (default 120). Thread-safe; usable in a
    forked child. Closed by close(), a `with` block, or when collected; a close() while
    another thread's call runs takes effect when that call returns. A Client cannot be copied or
    pickled (it stands for a native object of this process): make one per process.
    """

    def __init__(self, backend: Backend | None = None, store_dir: str | None = None, timeout: float | None = None,
                 interactive: bool | None = None, interactive_timeout: float | None = None,
                 protection: Protection | None = None) -> None:
        self._lock = allocate_lock()
        self._calls = 0  # calls running now; close() frees the context when the last one returns
        self._closing = False
        self._handle: int | None = None
        handle = ctypes.c_void_p()
        _native.context_new(ctypes.byref(handle))
        self._handle = handle.value
        try:
            _core.configure(self._handle, backend, store_dir, timeout, interactive, interactive_timeout, protection)
        except BaseException:
            self.close()
            raise

    def _call(self, operation: Callable[[int], T]) -> T:
        """Runs `operation` with the context, which close() cannot free meanwhile."""
        with self._lock:
            if self._handle is None or self._closing:
                raise ValueError("this deviceid.Client is closed")
            handle = self._handle
            self._calls += 1
        try:
            return operation(handle)
        finally:
            with self._lock:
                self._calls -= 1
                last = self._closing and self._calls == 0
            if last:
                self._free()

    def _free(self) -> None:
        with self._lock:
            handle, self._handle = self._handle, None
        if handle is not None:
            _native.context_free(handle)

    def close(self) -> None:
        """Releases the client's context (once the calls running now return); calling it again
        does nothing."""
        lock = getattr(self, "_lock", None)
        if lock is None:  # __init__ did not get far enough to make one
            return
        with lock:
            if self._handle is None or self._closing:
                return
            self._closing = True
            idle = self._calls == 0
        if idle:
            self._free()

    def __reduce__(self) -> NoReturn:
        raise TypeError("a deviceid.Client cannot be pickled: make one in each process")

    def __copy__(self) -> NoReturn:
        raise TypeError("a deviceid.Client cannot be copied: make another one")

    def __deepcopy__(self, memo: object) -> NoReturn:
        raise TypeError("a deviceid.Client cannot be copied: make another one")

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def __repr__(self) -> str:
        try:
            return f"<deviceid.Client backend={self.backend!r} interactive={self.interactive}>"
        except ValueError:
            return "<deviceid.Client (closed)>"
        except DeviceIDError as error:
            return f"<deviceid.Client ({error.name}: invalid configuration)>"

    def configure(self, backend: Backend | None = None, store_dir: str | None = None, timeout: float | None = None,
                  interactive: bool | None = None, interactive_timeout: float | None = None,
                  protection: Protection | None = None) -> None:
        """Changes the settings given, as the constructor takes them; the others stay. Forgets the
        client's cached answers. interactive and interactive_timeout are one setting (as
        deviceid_set_interactive() takes them): interactive given alone sets the wait for a
        person to its default, 120 s.

        Raises InvalidArgumentError for a bad value (the settings before it are changed).
        """
        self._call(lambda handle: _core.configure(handle, backend, store_dir, timeout, interactive,
                                                  interactive_timeout, protection))

    @property
    def backend(self) -> Backend:
        """The backend in force: "auto", "secret-service" or "file".

        Raises as deviceid.get_backend() does, and ValueError once the client is closed.
        """
        return self._call(_core.get_backend)

    @property
    def protection(self) -> Protection:
        """The protection class of what the client writes: "portable", "this-device-only" or
        "this-device-only+pcr7".

        Raises as deviceid.get_protection() does, and ValueError once the client is closed.
        """
        return self._call(_core.get_protection)

    @property
    def interactive(self) -> bool:
        """Whether the Secret Service may show unlock and confirmation dialogs.

        Raises as deviceid.get_interactive() does, and ValueError once the client is closed.
        """
        return self._call(_core.get_interactive)

    @property
    def timeout(self) -> float:
        """The deadline of each conversation with the Secret Service, the portal or the TPM, in seconds.

        Raises as deviceid.get_timeout() does, and ValueError once the client is closed.
        """
        return self._call(_core.get_timeout)

    def environment(self) -> Environment:
        """Where this process runs and where identifiers live there, in this client's
        configuration, as deviceid.environment(): one snapshot.

        Raises as deviceid.environment() does, and ValueError once the client is closed.
        """
        return self._call(_core.environment)

    def get(self, app_id: str) -> str:
        """This device's identifier for `app_id` (a canonical lowercase UUID), as deviceid.get().

        Raises as deviceid.get() does, and ValueError once the client is closed.
        """
        return self.identifier("app", app_id).id

    def get_info(self, app_id: str) -> StableID:
        """As get(), with where the answer came from and its flags.

        Raises as deviceid.get_info() does, and ValueError once the client is closed.
        """
        return self.identifier("app", app_id)

    def identifier(self, scope: Scope, name: str | None = None) -> StableID:
        """The identifier of a scope, as deviceid.identifier().

        Raises as deviceid.identifier() does, and ValueError once the client is closed.
        """
        return self._call(lambda handle: _core.identifier(handle, scope, name))

    def reset(self, app_id: str) -> None:
        """Removes the app's identifier from every store; the next get() mints a new one.

        Raises as deviceid.reset() does, and ValueError once the client is closed.
        """
        self._call(lambda handle: _core.reset(handle, "app", app_id))

    def reset_identifier(self, scope: Scope, name: str | None = None) -> None:
        """Forgets the identifier of a scope, as deviceid.reset_identifier().

        Raises as deviceid.reset_identifier() does, and ValueError once the client is closed.
        """
        self._call(lambda handle: _core.reset(handle, scope, name))

    def vendor_id(self, vendor: str) -> str:
        """identifierForVendor: the same for every app passing the same vendor id.

        Raises as deviceid.vendor_id() does, and ValueError once the client is closed.
        """
        return self.identifier("vendor", vendor).id

    def reset_vendor_id(self, vendor: str) -> None:
        """Forgets the vendor's identifier ("all the vendor's apps were removed").

        Raises as deviceid.reset_vendor_id() does, and ValueError once the client is closed.
        """
        self.reset_identifier("vendor", vendor)

    def advertising_id(self) -> str:
        """The user's advertising ID; all zeros while tracking is limited.

        Raises as deviceid.advertising_id() does, and ValueError once the client is closed.
        """
        return self.identifier("advertising").id

    def reset_advertising_id(self) -> None:
        """Mints a new advertising ID (hidden too while tracking is limited).

        Raises as deviceid.reset_advertising_id() does, and ValueError once the client is closed.
        """
        self.reset_identifier("advertising")

    def set_advertising_limited(self, limited: bool) -> None:
        """Turns "limit ad tracking" on or off in this client's stores; persistent.

        Raises as deviceid.set_advertising_limited() does, and ValueError once the client is closed.
        """
        self._call(lambda handle: _core.set_advertising_limited(handle, limited))

    def advertising_limited(self) -> bool:
        """Whether advertising tracking is limited in this client's stores.

        Raises as deviceid.advertising_limited() does, and ValueError once the client is closed.
        """
        return self._call(_core.advertising_limited)

    def openudid(self, app_id: str) -> str:
        """The ID every app of this user shares. Raises OptedOutError for an app that opted out."""
        return self.identifier("openudid", app_id).id

    def set_openudid_opt_out(self, app_id: str, opt_out: bool) -> None:
        """Opts the app out of OpenUDID, or back in; persistent.

        Raises as deviceid.set_openudid_opt_out() does, and ValueError once the client is closed.
        """
        self._call(lambda handle: _core.set_openudid_opt_out(handle, app_id, opt_out))

    def openudid_opted_out(self, app_id: str) -> bool:
        """Whether the app opted out of OpenUDID.

        Raises as deviceid.openudid_opted_out() does, and ValueError once the client is closed.
        """
        return self._call(lambda handle: _core.openudid_opted_out(handle, app_id))

    def reset_openudid(self) -> None:
        """Forgets the OpenUDID, for every app; the next request mints a new one.

        Raises as deviceid.reset_openudid() does, and ValueError once the client is closed.
        """
        self.reset_identifier("openudid")

    def store_secret(self, service: str, account: str, secret: bytes | bytearray | memoryview) -> None:
        """Stores bytes under service and account (replacing), as deviceid.store_secret().

        Raises as deviceid.store_secret() does, and ValueError once the client is closed.
        """
        self._call(lambda handle: _core.store_secret(handle, service, account, secret))

    def lookup_secret(self, service: str, account: str) -> bytes | None:
        """The secret stored under service and account, or None when there is none.

        Raises as deviceid.lookup_secret() does, and ValueError once the client is closed.
        """
        return self._call(lambda handle: _core.lookup_secret(handle, service, account))

    def delete_secret(self, service: str, account: str) -> bool:
        """Deletes the secret; False when there was none.

        Raises as deviceid.delete_secret() does, and ValueError once the client is closed.
        """
        return self._call(lambda handle: _core.delete_secret(handle, service, account))

    def hardware_id(self, app_id: str) -> str:
        """This TPM's hardware-bound ID for app_id, as deviceid.hardware_id(), within this Client's timeout.

        Raises as deviceid.hardware_id() does, and ValueError once the client is closed.
        """
        return self._call(lambda handle: _core.hardware_id(handle, app_id))

    def attest_enrolment(self, app_id: str) -> str:
        """app_id's enrolment request for the attestation CA, as deviceid.attest_enrolment().

        Raises as deviceid.attest_enrolment() does, and ValueError once the client is closed.
        """
        return self._call(lambda handle: _core.attest_enrolment(handle, app_id))

    def attest_activate(self, app_id: str, challenge: str | bytes) -> str:
        """The response to the CA's challenge for app_id, as deviceid.attest_activate().

        Raises as deviceid.attest_activate() does, and ValueError once the client is closed.
        """
        return self._call(lambda handle: _core.attest_activate(handle, app_id, challenge))

    def attest(self, app_id: str, nonce: bytes | bytearray | memoryview, ak_certificate: str | bytes | None = None) -> str:
        """Evidence for app_id's server over its nonce, as deviceid.attest().

        Raises as deviceid.attest() does, and ValueError once the client is closed.
        """
        return self._call(lambda handle: _core.attest(handle, app_id, nonce, ak_certificate))

    def webauthn_attestation(self, app_id: str, client_data_hash: bytes | bytearray | memoryview,
                             ak_certificate: str | bytes) -> str:
        """The WebAuthn registration of app_id's credential key, as deviceid.webauthn_attestation().

        Raises as deviceid.webauthn_attestation() does, and ValueError once the client is closed.
        """
        return self._call(lambda handle: _core.webauthn_attestation(handle, app_id, client_data_hash, ak_certificate))

    def webauthn_assertion(self, app_id: str, client_data_hash: bytes | bytearray | memoryview) -> str:
        """A WebAuthn assertion by app_id's credential key, as deviceid.webauthn_assertion().

        Raises as deviceid.webauthn_assertion() does, and ValueError once the client is closed.
        """
        return self._call(lambda handle: _core.webauthn_assertion(handle, app_id, client_data_hash))
