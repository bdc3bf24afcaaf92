#ifndef CDEVICEID_LIBRARIES_H
#define CDEVICEID_LIBRARIES_H
// Every library DeviceID calls besides libc, loaded on first use — as systemd loads its optional
// libraries (dlopen_many_sym_or_warn) — so that a process that only loads libdeviceid, or gets a
// mirror-first answer, maps none of them (libdeviceid.so.1 NEEDs libc and libm only):
//
//   DIDS_LIBRARY_GLIB    libgio-2.0.so.0 and, through it, GLib and GObject: the Secret Service
//                        over GDBus
//   DIDS_LIBRARY_SECRET  libsecret-1.so.0: the encrypted transfer session of a conversation that
//                        carries a caller's secret
//   DIDS_LIBRARY_CRYPTO  libcrypto.so.3: MD5/SHA-256 digests users ask for, AES-256-GCM sealing
//   DIDS_LIBRARY_DBUS    libdbus-1.so.3: the Secret Service in a process forked after GLib's
//                        D-Bus ran, or where GLib cannot be loaded
//
// dids_library_load(L) first; 0 means every function of L is resolved, and each dids_X then calls
// X. -1: dids_library_failure(L) says why (the library or one of its functions is missing: too old),
// naming the Debian package. A library is loaded once per process (pthread_once: thread-safe; a
// child forked mid-load loads again) and never unloaded; a failure is final for the process.
//
// The build needs none of these libraries' headers: each dids_*.h declares the few types it uses
// (public ABI, stable across the supported versions), and Tests/c/check_library_prototypes.c
// proves every declaration equal to the real headers' (scripts/test, on Debian 12 and 13).

typedef enum {
    DIDS_LIBRARY_GLIB = 0,
    DIDS_LIBRARY_SECRET = 1,
    DIDS_LIBRARY_CRYPTO = 2,
    DIDS_LIBRARY_DBUS = 3,
} dids_library;

/// Loads `library` and resolves every function DeviceID calls in it: 0, or -1.
int dids_library_load(dids_library library);
/// Why loading failed, in words that name the file and the package to install.
const char *dids_library_failure(dids_library library);
/// 1 when `library` is loaded in this process (never loads it).
int dids_library_is_loaded(dids_library library);

#include "dids_crypto.h"
#include "dids_dbus.h"
#include "dids_glib.h"

#endif
