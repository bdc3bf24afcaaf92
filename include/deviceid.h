/*
 * deviceid.h — a stable, private identifier for the device a program runs on, kept in the
 * user's keyring (Secret Service) or, where none answers, in a private file store.
 *
 *     char id[DEVICEID_UUID_STRING_MAX];
 *     int r = deviceid_get("com.example.app", id, sizeof id);
 *     if (r < 0) fprintf(stderr, "deviceid: %s\n", deviceid_strerror(r));
 *
 * Conventions (after systemd's sd-id128 and libsodium):
 * - every function returning int returns 0 (DEVICEID_OK) or a negative DEVICEID_E_* status;
 * - strings are NUL-terminated UTF-8; names (app ids, services, accounts) are 1 to
 *   DEVICEID_NAME_MAX - 1 bytes without control characters;
 * - results go to caller buffers of documented size, or are allocated by the library and released
 *   only with deviceid_free(), which wipes them;
 * - nothing a caller passes makes the library crash: NULL, empty, invalid UTF-8, over-long
 *   strings and small buffers each get a status. (Pointers to invalid memory, and freeing a
 *   pointer twice, are undefined as everywhere in C.)
 * - all functions are thread-safe.
 *
 * Link with: cc app.c $(pkg-config --cflags --libs deviceid)
 */
#ifndef DEVICEID_H
#define DEVICEID_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__clang__)
#define DEVICEID_NONNULL _Nonnull
#define DEVICEID_NULLABLE _Nullable
#else
#define DEVICEID_NONNULL
#define DEVICEID_NULLABLE
#endif

/* ---- Version ------------------------------------------------------------------------------ */

#define DEVICEID_VERSION_MAJOR 0
#define DEVICEID_VERSION_MINOR 1
#define DEVICEID_VERSION_PATCH 0
#define DEVICEID_VERSION_STRING "0.1.0"

/** The library's version, "MAJOR.MINOR.PATCH"; static storage, never NULL. */
const char *DEVICEID_NONNULL deviceid_version_string(void);
int deviceid_version_major(void);
int deviceid_version_minor(void);
int deviceid_version_patch(void);

/* ---- Sizes (as macros, and as functions for bindings that cannot see macros) -------------- */

/** Bytes for a UUID in text form with its terminating NUL: 36 + 1. */
#define DEVICEID_UUID_STRING_MAX 37U
/** Bytes for the longest name (app id, service, account) with its NUL: 255 + 1. */
#define DEVICEID_NAME_MAX 256U
/** The largest secret deviceid_secret_store() accepts, in bytes. */
#define DEVICEID_SECRET_MAX 65536U

size_t deviceid_uuid_string_max(void);
size_t deviceid_name_max(void);
size_t deviceid_secret_max(void);

/* ---- Status codes (stable; the same names in Swift and Python) ---------------------------- */

#define DEVICEID_OK                    0
#define DEVICEID_E_INVALID_ARGUMENT  (-1)  /* NULL, empty, too long, not UTF-8, control chars */
#define DEVICEID_E_BUFFER_TOO_SMALL  (-2)  /* out_size cannot hold the answer */
#define DEVICEID_E_NOT_FOUND         (-3)  /* the store answered: no such item */
#define DEVICEID_E_LOCKED            (-4)  /* the keyring is locked; nothing read, written, minted */
#define DEVICEID_E_UNAVAILABLE       (-5)  /* no session bus / Secret Service / usable store */
#define DEVICEID_E_TIMED_OUT         (-6)  /* the store did not answer within the deadline */
#define DEVICEID_E_CORRUPT           (-7)  /* stored data failed validation; not returned, not replaced */
#define DEVICEID_E_IO                (-8)  /* file store I/O failed (disk full, read-only, ...) */
#define DEVICEID_E_PERMISSION        (-9)  /* unsafe location (symlink, foreign owner, writable by others) or access denied */
#define DEVICEID_E_NO_MEMORY        (-10)
#define DEVICEID_E_TOO_LARGE        (-11)  /* data over DEVICEID_SECRET_MAX */
#define DEVICEID_E_UNSUPPORTED      (-12)  /* not available here (e.g. MD5 refused in FIPS mode) */
#define DEVICEID_E_KEYRING          (-13)  /* the Secret Service answered with an error */
#define DEVICEID_E_OPTED_OUT        (-14)  /* the caller opted out of this identifier */
#define DEVICEID_E_INTERNAL         (-15)  /* a bug in DeviceID; please report it */

/**
 * A one-line English description of `status`; static storage, never NULL. Unknown values give
 * "unknown status".
 */
const char *DEVICEID_NONNULL deviceid_strerror(int status);

/** The symbolic name of `status` without its prefix ("LOCKED", "OK"); static, never NULL. */
const char *DEVICEID_NONNULL deviceid_status_name(int status);

/**
 * What went wrong in the calling thread's last failed call, in words (for example the path
 * that was refused and why). Never contains secret material. Thread-local storage, valid until
 * the thread's next DeviceID call; "" when there is nothing to add. Never NULL.
 */
const char *DEVICEID_NONNULL deviceid_last_error(void);

/* ---- Configuration ------------------------------------------------------------------------ */

#define DEVICEID_BACKEND_AUTO           0  /* keyring if a Secret Service answers, plus the file store */
#define DEVICEID_BACKEND_SECRET_SERVICE 1  /* only the Secret Service; its absence is an error */
#define DEVICEID_BACKEND_FILE           2  /* only the file store */

/**
 * Chooses the backend for this process, overriding DEVICEID_BACKEND, and forgets cached answers.
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT for an unknown value.
 */
int deviceid_set_backend(int backend);

/**
 * The backend in force (a DEVICEID_BACKEND_* value), or DEVICEID_E_INVALID_ARGUMENT when the
 * environment (DEVICEID_BACKEND, DEVICEID_TIMEOUT_MS, DEVICEID_STORE_DIR) is invalid.
 */
int deviceid_get_backend(void);

/**
 * Sets the deadline of each conversation with the Secret Service, 1 to 86400000 ms (default
 * 5000, or DEVICEID_TIMEOUT_MS). Returns 0 or DEVICEID_E_INVALID_ARGUMENT.
 */
int deviceid_set_timeout_ms(unsigned int milliseconds);

/**
 * Sets the file store's directory (an absolute path), or with NULL returns to the default:
 * $DEVICEID_STORE_DIR, else $XDG_DATA_HOME/deviceid, else ~/.local/share/deviceid.
 * Forgets cached answers. Returns 0 or DEVICEID_E_INVALID_ARGUMENT.
 */
int deviceid_set_store_dir(const char *DEVICEID_NULLABLE path);

/* ---- The stable identifier ------------------------------------------------------------------ */

#define DEVICEID_SOURCE_KEYRING 1  /* read from the Secret Service */
#define DEVICEID_SOURCE_FILE    2  /* read from the file store */
#define DEVICEID_SOURCE_CREATED 3  /* minted by this call: every store said "none" */

/**
 * Writes this device's identifier for `app_id` — a canonical lowercase UUID v4, 36 characters
 * and a NUL — to `out`. The same value for every call, process and language, across restarts and
 * reinstalls, until deviceid_reset(). Different app ids get unrelated identifiers.
 *
 * A new identifier is minted only when every available store positively answered "none"; a
 * locked or silent keyring without a file-store copy gives DEVICEID_E_LOCKED or
 * DEVICEID_E_TIMED_OUT instead. After the first answer the process answers from memory.
 *
 * app_id:   1 to 255 bytes of UTF-8 without control characters, e.g. "com.example.app".
 * out:      receives the NUL-terminated identifier; untouched on failure.
 * out_size: at least DEVICEID_UUID_STRING_MAX.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_BUFFER_TOO_SMALL, DEVICEID_E_LOCKED,
 * DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT, DEVICEID_E_CORRUPT, DEVICEID_E_IO,
 * DEVICEID_E_PERMISSION, DEVICEID_E_KEYRING, DEVICEID_E_NO_MEMORY.
 */
int deviceid_get(const char *DEVICEID_NULLABLE app_id, char *DEVICEID_NULLABLE out, size_t out_size);

/**
 * As deviceid_get(), and stores in `*source` (when not NULL) where the identifier came from: a
 * DEVICEID_SOURCE_* value. Answers from memory report where they first came from.
 */
int deviceid_get_ex(const char *DEVICEID_NULLABLE app_id, char *DEVICEID_NULLABLE out, size_t out_size,
                    int *DEVICEID_NULLABLE source);

/**
 * Removes the identifier of `app_id` from every store, so that the next deviceid_get() mints a
 * new one. Removing one that does not exist succeeds. A locked keyring fails with
 * DEVICEID_E_LOCKED before anything is removed.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_LOCKED, DEVICEID_E_UNAVAILABLE,
 * DEVICEID_E_TIMED_OUT, DEVICEID_E_IO, DEVICEID_E_PERMISSION, DEVICEID_E_KEYRING.
 */
int deviceid_reset(const char *DEVICEID_NULLABLE app_id);

/** The name of a DEVICEID_SOURCE_* value ("keyring", "file", "created"); "unknown" otherwise. */
const char *DEVICEID_NONNULL deviceid_source_name(int source);

/* ---- Keychain-style secrets ----------------------------------------------------------------- */

/*
 * Items are filed under the Secret Service attributes `service` and `username` (the convention of
 * secret-tool and the common keyring clients): what is stored here under service S and account A
 * is printed by `secret-tool lookup service S username A`, and what secret-tool stored is read
 * here. Services starting with "deviceid." are reserved. Secrets go only to the selected backend
 * (in auto mode: the keyring when one answers, else the file store) and are never copied out of
 * the keyring.
 */

/**
 * Stores `size` bytes at `data` (binary-safe; size 0 allowed, then data may be NULL), replacing
 * the item with the same service and account.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_TOO_LARGE (size > DEVICEID_SECRET_MAX),
 * DEVICEID_E_LOCKED, DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT, DEVICEID_E_KEYRING,
 * DEVICEID_E_IO, DEVICEID_E_PERMISSION, DEVICEID_E_NO_MEMORY.
 */
int deviceid_secret_store(const char *DEVICEID_NULLABLE service, const char *DEVICEID_NULLABLE account,
                          const void *DEVICEID_NULLABLE data, size_t size);

/**
 * Looks up a secret. On success `*data` receives a library-allocated copy (free it with
 * deviceid_free(); it is NUL-terminated one byte past `*size` for convenience, and non-NULL even
 * for an empty secret) and `*size` its length. On failure both are set to NULL and 0.
 *
 * Returns 0, or DEVICEID_E_NOT_FOUND, DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_LOCKED,
 * DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT, DEVICEID_E_CORRUPT, DEVICEID_E_KEYRING,
 * DEVICEID_E_IO, DEVICEID_E_PERMISSION, DEVICEID_E_NO_MEMORY.
 */
int deviceid_secret_lookup(const char *DEVICEID_NULLABLE service, const char *DEVICEID_NULLABLE account,
                           void *DEVICEID_NULLABLE *DEVICEID_NULLABLE data, size_t *DEVICEID_NULLABLE size);

/**
 * Deletes the secret from every store of the backend.
 * Returns 0, or DEVICEID_E_NOT_FOUND when no store had it, DEVICEID_E_INVALID_ARGUMENT,
 * DEVICEID_E_LOCKED (nothing deleted), DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT,
 * DEVICEID_E_KEYRING, DEVICEID_E_IO, DEVICEID_E_PERMISSION.
 */
int deviceid_secret_delete(const char *DEVICEID_NULLABLE service, const char *DEVICEID_NULLABLE account);

/**
 * Wipes and frees memory the library allocated (deviceid_secret_lookup()'s `*data`). NULL is
 * ignored. Passing any other pointer, or the same pointer twice, is undefined.
 */
void deviceid_free(void *DEVICEID_NULLABLE p);

#ifdef __cplusplus
}
#endif

#endif /* DEVICEID_H */
