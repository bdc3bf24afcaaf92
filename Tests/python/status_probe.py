"""Calls every int-returning function of libdeviceid (ctypes, no binding in between) with good and
bad arguments in the configuration its environment sets up, and prints, as JSON, the negative
statuses each one returned. test_documented_statuses.py runs it in many environments (a healthy
keyring, none, a locked one, faults, an invalid environment, broken stores) and checks that each
status is on the function's list in include/deviceid.h and its manual page.

    DEVICEID_LIBRARY=... python3 status_probe.py [backend]
"""
import ctypes
import json
import os
import sys
from ctypes import POINTER, byref, c_char_p, c_int, c_size_t, c_uint, c_void_p, create_string_buffer

lib = ctypes.CDLL(os.environ["DEVICEID_LIBRARY"])
seen = {}


def call(name, *args):
    func = getattr(lib, name)
    func.restype = c_int
    status = func(*args)
    if status < 0:
        seen.setdefault(name, set()).add(status)
    return status


def out(size=37):
    return create_string_buffer(size)


backend = sys.argv[1] if len(sys.argv) > 1 else None
context = c_void_p()
call("deviceid_context_new", byref(context))
call("deviceid_context_new", None)
# Every stateful call, through the process-wide configuration (NULL) and a context of its own.
TARGETS = (None, context)
timeout = c_uint(int(os.environ.get("PROBE_TIMEOUT_MS", "1500")))
for target in TARGETS:
    if backend is not None:
        call("deviceid_set_backend", target, {"auto": 0, "secret-service": 1, "file": 2}[backend])
    call("deviceid_set_backend", target, 7)
    call("deviceid_set_backend", target, -1)
    call("deviceid_get_backend", target)
    call("deviceid_set_timeout_ms", target, c_uint(0))
    call("deviceid_set_timeout_ms", target, timeout)
    milliseconds = c_uint()
    call("deviceid_get_timeout_ms", target, byref(milliseconds))
    call("deviceid_get_timeout_ms", target, None)
    call("deviceid_set_store_dir", target, b"relative")
    call("deviceid_set_interactive", target, 2, 0)
    call("deviceid_get_interactive", target)
    call("deviceid_set_protection", target, 3)
    call("deviceid_set_protection", target, -1)
    call("deviceid_get_protection", target)

NAMES = [b"probe.app", None, b"", b"x" * 300, b"\xff\xfe"]
for name in NAMES:
    for size in (37, 8):
        call("deviceid_get", name, out(size), c_size_t(size))
        for target in TARGETS:
            for scope in (1, 2, 3, 4, 9):
                call("deviceid_identifier", target, scope, name, out(size), c_size_t(size), None, None)
    call("deviceid_reset", name)
    for target in TARGETS:
        for opt_out in (0, 2):
            call("deviceid_set_openudid_opt_out", target, name, opt_out)
        call("deviceid_get_openudid_opt_out", target, name)
        for scope in (1, 2, 3, 4, 9):
            call("deviceid_identifier_location", target, scope, name)
            call("deviceid_identifier_reset", target, scope, name)
for target in TARGETS:
    call("deviceid_set_openudid_opt_out", target, b"probe.opted", 1)
    call("deviceid_identifier", target, 4, b"probe.opted", out(), c_size_t(37), None, None)
    call("deviceid_identifier_location", target, 4, b"probe.opted")
    call("deviceid_identifier", target, 3, None, None, c_size_t(37), None, None)
    for limited in (1, 2, 0):
        call("deviceid_set_advertising_limited", target, limited)
        call("deviceid_get_advertising_limited", target)

for service, account in ((b"probe.service", b"acct"), (None, b"acct"), (b"deviceid.reserved", b"a"), (b"s", b"")):
    for target in TARGETS:
        call("deviceid_secret_store", target, service, account, b"value", c_size_t(5))
        call("deviceid_secret_store", target, service, account, None, c_size_t(5))
        call("deviceid_secret_store", target, service, account, b"v", c_size_t(70000))
        data, size = c_void_p(), c_size_t()
        if call("deviceid_secret_lookup", target, service, account, byref(data), byref(size)) == 0:
            lib.deviceid_free(data)
        call("deviceid_secret_lookup", target, service, account, None, None)
        call("deviceid_secret_delete", target, service, account)
        call("deviceid_secret_delete", target, service, account)

# The hardware-bound ID and attestation, against whatever TPM DEVICEID_TPM_TCTI names (none here:
# UNAVAILABLE), with good and bad arguments.
for target in TARGETS:
    for name in NAMES:
        for size in (37, 8):
            call("deviceid_hardware_id", target, name, out(size), c_size_t(size))
    message = c_void_p()
    for name in (b"probe.app", None, b"\xff"):
        for status in (call("deviceid_attest_enrolment", target, name, byref(message)),
                       call("deviceid_attest_enrolment", target, name, None)):
            if status == 0:
                lib.deviceid_free(message)
    for challenge in (None, b"{}", b'{"v":2,"type":"deviceid.enrolment-challenge"}',
                      b'{"v":1,"type":"deviceid.enrolment-challenge","id":"1","credential_blob":"AA==",'
                      b'"encrypted_secret":"AA=="}'):
        for name in (b"probe.app", None):
            if call("deviceid_attest_activate", target, name, challenge, byref(message)) == 0:
                lib.deviceid_free(message)
    for name, nonce, size, certificate in ((b"probe.app", b"n" * 32, 32, None), (None, b"n", 1, None),
                                           (b"probe.app", None, 32, None), (b"probe.app", b"n" * 65, 65, None),
                                           (b"probe.app", b"n", 1, b"{}")):
        if call("deviceid_attest", target, name, nonce, c_size_t(size), certificate, byref(message)) == 0:
            lib.deviceid_free(message)
    certificate = b'{"v":1,"type":"deviceid.ak-certificate","certificate":"MAA="}'
    for name, digest, size in ((b"probe.app", b"h" * 32, 32), (None, b"h" * 32, 32), (b"probe.app", None, 32),
                               (b"probe.app", b"h" * 31, 31)):
        for given in (certificate, None, b"{}"):
            if call("deviceid_attest_webauthn", target, name, digest, c_size_t(size), given, byref(message)) == 0:
                lib.deviceid_free(message)
        if call("deviceid_assert", target, name, digest, c_size_t(size), byref(message)) == 0:
            lib.deviceid_free(message)

for fmt in (0, 1, 2, 3, 8):
    call("deviceid_uuid_generate", out(), c_size_t(37), c_uint(fmt))
    call("deviceid_uuid_generate", out(8), c_size_t(8), c_uint(fmt))
    call("deviceid_uuid_format", b"\x01" * 16, c_uint(fmt), out(), c_size_t(37))
    call("deviceid_uuid_format", None, c_uint(fmt), out(8), c_size_t(8))
    for app in (b"probe.app", b"00000000-0000-0000-0000-000000000000", None, b""):
        call("deviceid_machine_app_specific", app, c_uint(fmt), out(), c_size_t(37))
        call("deviceid_machine_app_specific", app, c_uint(fmt), out(8), c_size_t(8))
    call("deviceid_machine_id_raw", c_uint(fmt), out(), c_size_t(37))
    call("deviceid_machine_id_raw", c_uint(fmt), out(8), c_size_t(8))
    call("deviceid_product_uuid_raw", c_uint(fmt), out(), c_size_t(37))
    call("deviceid_product_uuid_raw", c_uint(fmt), out(8), c_size_t(8))
for text in (b"1b4e28ba-2fa1-4d2b-883f-0016d3cca427", b"{1b4e28ba-2fa1-4d2b-883f-0016d3cca427}", None):
    call("deviceid_uuid_parse", text, create_string_buffer(16))
call("deviceid_uuid_parse", b"1b4e28ba2fa14d2b883f0016d3cca427", None)

for interface in (None, b"lo", b"no-such-if0", b"x" * 40):
    for fmt in (0, 2, 8):
        call("deviceid_mac_address", interface, c_uint(fmt), out(18), c_size_t(18), out(16), c_size_t(16), None)
        call("deviceid_mac_address", interface, c_uint(fmt), out(4), c_size_t(4), out(2), c_size_t(2), None)
    call("deviceid_mac_md5", interface, b"com.example", out(33), c_size_t(33), None)
    call("deviceid_mac_md5", interface, None, out(8), c_size_t(8), None)
for algorithm in (1, 2, 5):
    for size in (65, 8):
        call("deviceid_hash_hex", algorithm, b"abc", c_size_t(3), out(size), c_size_t(size))
        call("deviceid_hash_hex", algorithm, None, c_size_t(3), out(size), c_size_t(size))
        call("deviceid_token_hash", algorithm, b"tok", c_size_t(3), b"bundle", out(size), c_size_t(size))
        call("deviceid_token_hash", algorithm, b"tok", c_size_t(3), None, out(size), c_size_t(size))
    call("deviceid_hash_hex", algorithm, b"abc", c_size_t(1 << 32), out(65), c_size_t(65))

ENVIRONMENT = 8192  # more than sizeof(deviceid_environment): a caller built against a later header
for target in TARGETS:
    call("deviceid_get_environment", target, out(ENVIRONMENT), c_size_t(ENVIRONMENT))
    call("deviceid_get_environment", target, out(8), c_size_t(8))
    call("deviceid_get_environment", target, out(8), c_size_t(1 << 20))  # refused before anything is written
    call("deviceid_get_environment", target, None, c_size_t(ENVIRONMENT))
lib.deviceid_context_free(context)

print(json.dumps({name: sorted(statuses) for name, statuses in seen.items()}))
