#ifndef CDEVICEID_LIBRARIES_H
#define CDEVICEID_LIBRARIES_H
#include <stddef.h>
// The one loader of the libraries DeviceID calls besides libc, and the four it loads for the
// keyring and digests. Every one is loaded on first use — as systemd loads its optional
// libraries (dlopen_many_sym_or_warn) — so that a process that only loads libdeviceid, or gets a
// mirror-first answer, maps none of them (libdeviceid.so.2 NEEDs libc and libm only):
//
//   DIDS_LIBRARY_GLIB    libgio-2.0.so.0 and, through it, GLib and GObject: the Secret Service
//                        over GDBus
//   DIDS_LIBRARY_SECRET  libsecret-1.so.0: the encrypted transfer session of a conversation that
//                        carries a caller's secret
//   DIDS_LIBRARY_CRYPTO  libcrypto.so.3: MD5/SHA-256 digests users ask for, AES-256-GCM sealing
//   DIDS_LIBRARY_DBUS    libdbus-1.so.3: the Secret Service in a process forked after GLib's
//                        D-Bus ran, or where GLib cannot be loaded
//
// A room that speaks through a library of its own declares its loadable in its own file, as
// systemd's tpm2-util.c declares its DLSYM list (the TPM room: CDeviceIDTPM's tss2/esys.c), with
// DIDS_LOADABLE of dids_loader.h; this loader only loads.
//
// dids_loadable_load(L) first; DIDS_LIBRARY_LOADED means every function of L is resolved, and each
// dids_X then calls X. DIDS_LIBRARY_ABSENT is final for the process: the file is missing or is no
// library, or a function is missing (too old). DIDS_LIBRARY_FAILED is for now: the process lacked
// memory, address space or descriptors, and a later call tries again. DIDS_LIBRARY_HALF_LOADED:
// this process was forked while another thread of its parent was loading a library, and loads
// nothing more (the library is installed: nothing may do without it as if it were absent).
// dids_loadable_failure says why in words that name the file and the Debian package. A loaded
// library is never unloaded; loading is thread-safe.
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

/// A library loaded on first use: its file, its functions and what loading it came to (dids_loader.h).
typedef struct dids_loadable dids_loadable;

enum {
    DIDS_LIBRARY_LOADED = 0,
    DIDS_LIBRARY_FAILED = -1,
    DIDS_LIBRARY_ABSENT = -2,
    DIDS_LIBRARY_HALF_LOADED = -3,
};

/// The loadable of one of the four libraries above.
dids_loadable *dids_library_loadable(dids_library library);
/// Loads `library` and resolves every function DeviceID calls in it (see above).
int dids_loadable_load(dids_loadable *library);
/// Why loading failed ("" when it did not), copied into `out`.
void dids_loadable_failure(dids_loadable *library, char *out, size_t size);
/// 1 when `library` is loaded in this process (never loads it).
int dids_loadable_is_loaded(dids_loadable *library);

#include "dids_crypto.h"
#include "dids_dbus.h"
#include "dids_glib.h"

#endif
