"""The Python binding over an ASan-built libdeviceid: every pointer the binding owns is freed.

Run with the toolchain's ASan runtime preloaded (scripts/robustness does):
    LD_PRELOAD=libclang_rt.asan-x86_64.so ASAN_OPTIONS=detect_leaks=1:leak_check_at_exit=0 \
    DEVICEID_LIBRARY=.build/asan/debug/libdeviceid.so.2 python3 python_asan.py [--leak-on-purpose]

The leak check runs while the interpreter is alive, so Python's own objects are still reachable
and only blocks nobody points to — a secret never handed to deviceid_free — are reported.
--leak-on-purpose drops one looked-up secret without freeing it: the check must then fail (a
control that proves the check can fail).
"""
import ctypes
import gc
import os
import sys
import tempfile

import deviceid
from deviceid import _native


def workload(rounds):
    store = tempfile.mkdtemp(prefix="deviceid-asan-")
    deviceid.set_store_dir(store)
    for backend in ("file", "auto"):
        deviceid.set_backend(backend)
        for i in range(rounds):
            deviceid.get_info(f"asan.app.{i % 7}")
            deviceid.store_secret("asan", f"acct{i % 5}", os.urandom(i % 300))
            deviceid.lookup_secret("asan", f"acct{i % 5}")
            deviceid.lookup_secret("asan", "missing")
            deviceid.delete_secret("asan", f"acct{i % 5}")
            deviceid.uuid4()
            deviceid.parse_uuid(deviceid.uuid4())
            deviceid.hash_hex(os.urandom(64), "md5")
            deviceid.token_hash(b"token", "com.example.app")
            deviceid.machine_app_specific("com.example.app")
            deviceid.vendor_id("com.acme")
            for bad in ("", "x" * 300, "a\udc80"):
                try:
                    deviceid.get(bad)
                except deviceid.DeviceIDError:
                    pass
            try:
                deviceid.mac_address()
            except deviceid.NotFoundError:
                pass


def main():
    workload(200)
    if "--leak-on-purpose" in sys.argv:
        data, size = ctypes.c_void_p(), ctypes.c_size_t()
        deviceid.store_secret("asan", "leak", b"dropped")
        _native.secret_lookup(None, b"asan", b"leak", ctypes.byref(data), ctypes.byref(size))
        data = None  # the only pointer to the secret is gone, never freed
    gc.collect()
    leaks = ctypes.CDLL(None).__lsan_do_recoverable_leak_check()
    print(f"python_asan: leak check {'FOUND LEAKS' if leaks else 'clean'}")
    sys.stdout.flush()
    os._exit(1 if leaks else 0)


if __name__ == "__main__":
    main()
