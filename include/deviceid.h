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
 * - each function's doc ends with "Returns 0, or ..." naming every status it can return; any
 *   function may also return DEVICEID_E_INTERNAL, which is a bug in DeviceID (please report it).
 *
 * Threads: every function may be called from any thread at any time (MT-Safe in attributes(7)
 * terms). Answers are cached per process; a reset or a configuration change on one thread is seen
 * by every thread's next call. deviceid_last_error() is per thread.
 *
 * fork(): a child of a process that used DeviceID (Python multiprocessing, prefork servers) may
 * call every function, even if another thread of the parent was inside one at the fork: the
 * library's locks are made free again in the child (pthread_atfork), no file lock is inherited,
 * and the child reaches the Secret Service over a D-Bus connection of its own (libdbus), never
 * the parent's. A deviceid_context made before the fork may be used in the child. Between fork()
 * and exec() in a multithreaded program, only async-signal-safe functions may be called, and
 * no DeviceID function is one.
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
#define DEVICEID_VERSION_MINOR 3
#define DEVICEID_VERSION_PATCH 0
#define DEVICEID_VERSION_STRING "0.3.0"

/**
 * The library's version, "MAJOR.MINOR.PATCH" (static storage, never NULL), and its parts.
 *
 * Returns the text, or each part (0 or more); they never fail.
 */
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
/** Bytes for "AA:BB:CC:DD:EE:FF" and its NUL (the compact form needs 13). */
#define DEVICEID_MAC_STRING_MAX 18U
/** Bytes for a network interface name and its NUL (IFNAMSIZ). */
#define DEVICEID_INTERFACE_NAME_MAX 16U
/** Bytes for a lowercase hex MD5 digest and its NUL. */
#define DEVICEID_MD5_HEX_MAX 33U
/** Bytes for a lowercase hex SHA-256 digest and its NUL. */
#define DEVICEID_SHA256_HEX_MAX 65U

size_t deviceid_uuid_string_max(void);
size_t deviceid_name_max(void);
size_t deviceid_secret_max(void);
size_t deviceid_mac_string_max(void);
size_t deviceid_interface_name_max(void);
size_t deviceid_md5_hex_max(void);
size_t deviceid_sha256_hex_max(void);

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
#define DEVICEID_E_NO_MEMORY        (-10)  /* memory or descriptors ran out (also loading a library); retry later */
#define DEVICEID_E_TOO_LARGE        (-11)  /* data over DEVICEID_SECRET_MAX */
#define DEVICEID_E_UNSUPPORTED      (-12)  /* not available here (e.g. MD5 refused in FIPS mode) */
#define DEVICEID_E_KEYRING          (-13)  /* the keyring (Secret Service or Secret portal) answered with an error */
#define DEVICEID_E_OPTED_OUT        (-14)  /* the caller opted out of this identifier */
#define DEVICEID_E_INTERNAL         (-15)  /* a bug in DeviceID; please report it */
#define DEVICEID_E_INVALID_MACHINE_ID (-16) /* the machine ID is empty, all zeros or malformed */
#define DEVICEID_E_NO_COLLECTION    (-17)  /* the Secret Service has no default collection (none open) */
#define DEVICEID_E_NO_KEYRING       (-18)  /* auto: no keyring takes the secret; not written in plain text */

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
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (an unknown value).
 */
int deviceid_set_backend(int backend);

/**
 * The backend in force (a DEVICEID_BACKEND_* value).
 *
 * Returns that value (0 or more), or DEVICEID_E_INVALID_ARGUMENT (the environment:
 * DEVICEID_BACKEND, DEVICEID_TIMEOUT_MS or DEVICEID_STORE_DIR, is invalid).
 */
int deviceid_get_backend(void);

/**
 * Sets the deadline of each conversation with the Secret Service or the TPM, 1 to 86400000 ms
 * (default 5000, or DEVICEID_TIMEOUT_MS).
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (out of range).
 */
int deviceid_set_timeout_ms(unsigned int milliseconds);

/**
 * Sets the file store's directory (an absolute path), or with NULL returns to the default, the
 * first that applies: $DEVICEID_STORE_DIR; $STATE_DIRECTORY/deviceid (a systemd service's
 * StateDirectory=, its first entry); $XDG_DATA_HOME/deviceid; for root, /var/lib/deviceid;
 * ~/.local/share/deviceid. Forgets cached answers. Nothing is created or checked until a call
 * uses the store. A variable among these whose bytes are not UTF-8 is refused by that call
 * (DEVICEID_E_INVALID_ARGUMENT, naming it), never read as another path.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (a relative or over-long path, not UTF-8).
 */
int deviceid_set_store_dir(const char *DEVICEID_NULLABLE path);

/**
 * Interactive mode, for desktop apps (default off, or DEVICEID_INTERACTIVE=1). When off, DeviceID
 * never starts anything that can show a dialog: a locked keyring is DEVICEID_E_LOCKED at once,
 * and a prompt the Secret Service asks for (KeePassXC confirms every write with one) is run only
 * while it shows nothing, within the deadline of deviceid_set_timeout_ms(). When on, the
 * Secret Service may show unlock and confirmation dialogs, and a call waits up to `timeout_ms`
 * (1 to 86400000; 0 for the default, 120000) for the person; a dialog still open then is
 * dismissed and the call fails with DEVICEID_E_LOCKED. Never waits forever.
 *
 * interactive: 1 for on, 0 for off.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (interactive not 0 or 1, timeout_ms over 86400000).
 */
int deviceid_set_interactive(int interactive, unsigned int timeout_ms);

/**
 * Whether interactive mode is on.
 *
 * Returns 1 (on) or 0 (off), or DEVICEID_E_INVALID_ARGUMENT (the environment is invalid).
 */
int deviceid_get_interactive(void);

/* ---- The stable identifier ------------------------------------------------------------------ */

#define DEVICEID_SOURCE_KEYRING 1  /* read from the Secret Service */
#define DEVICEID_SOURCE_FILE    2  /* read from the file store */
#define DEVICEID_SOURCE_CREATED 3  /* minted by this call: every store said "none" */
#define DEVICEID_SOURCE_PORTAL  4  /* in a sandbox: derived from the Secret portal's secret for the app */

/**
 * Writes this device's identifier for `app_id` — a canonical lowercase UUID v4, 36 characters
 * and a NUL — to `out`. The same value for every call, process and language, across restarts and
 * reinstalls, until deviceid_reset(). Different app ids get unrelated identifiers.
 *
 * A new identifier is minted only when every store that may hold it positively answered "none";
 * a locked or silent keyring without a file-store copy gives DEVICEID_E_LOCKED or
 * DEVICEID_E_TIMED_OUT instead, and so does a keyring the file store says this user keeps IDs in
 * but that cannot be reached from here (no session bus: an ssh login, cron): DEVICEID_E_UNAVAILABLE.
 * The keyring is the authority; a reset anywhere is never undone by an older copy. The rules are
 * in docs/STATE.md, "The merge rule (get)". After the first answer the process answers from
 * memory (rule 6).
 *
 * app_id:   1 to 255 bytes of UTF-8 without control characters, e.g. "com.example.app".
 * out:      receives the NUL-terminated identifier; untouched on failure.
 * out_size: at least DEVICEID_UUID_STRING_MAX.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (app_id, or the environment's configuration),
 * DEVICEID_E_BUFFER_TOO_SMALL, DEVICEID_E_LOCKED, DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT,
 * DEVICEID_E_NO_COLLECTION (no keyring, database or wallet is open as the default collection:
 * the secret-service backend; or auto, where this user's IDs were kept in a keyring before — auto
 * otherwise answers with a provisional ID in the file store, flagged DEVICEID_FLAG_FILE_ONLY),
 * DEVICEID_E_CORRUPT, DEVICEID_E_IO, DEVICEID_E_PERMISSION, DEVICEID_E_KEYRING,
 * DEVICEID_E_NO_MEMORY.
 */
int deviceid_get(const char *DEVICEID_NULLABLE app_id, char *DEVICEID_NULLABLE out, size_t out_size);

#define DEVICEID_FLAG_DEVICE_CHANGED 1u  /* stored on another machine (clone, restored backup) */
#define DEVICEID_FLAG_WEAK           2u  /* not known to be unique to this device */
#define DEVICEID_FLAG_LIMITED        4u  /* advertising tracking limited: the ID reads as zeros */
#define DEVICEID_FLAG_FILE_ONLY      8u  /* the keyring answered but refused or failed to keep the ID */
#define DEVICEID_FLAG_REPAIRED      16u  /* a corrupt copy in one store was replaced from the other */
#define DEVICEID_FLAG_MIRRORED      32u  /* answered by the file mirror the keyring confirmed, no D-Bus */
#define DEVICEID_FLAG_PROVISIONAL   64u  /* kept without a keyring: one that answers later with another ID wins */
#define DEVICEID_FLAG_APP_DATA_ONLY 128u  /* kept only in a sandboxed app's own data: removed with it */

/**
 * As deviceid_get(), and stores in `*source` (when not NULL) where the identifier came from (a
 * DEVICEID_SOURCE_* value; answers from memory report where they first came from) and in `*flags`
 * (when not NULL) DEVICEID_FLAG_* bits:
 * - DEVICEID_FLAG_DEVICE_CHANGED: the machine fingerprint stored with the ID (an HMAC of the
 *   machine ID, never the raw value) does not match this machine — a cloned VM image or a restored
 *   backup. The ID is still returned; deviceid_reset() then deviceid_get() re-mints it.
 * - DEVICEID_FLAG_WEAK: no machine ID could be read, so the ID cannot be bound to this machine.
 * - DEVICEID_FLAG_FILE_ONLY: the ID is kept only in the file store, because the keyring was there
 *   but refused or failed to store it (locked, no default collection, an error; the reason is in
 *   deviceid_last_error()). The ID is good; this answer is not remembered, so the next call
 *   tries the keyring again.
 * - DEVICEID_FLAG_REPAIRED: one store held a corrupt copy of the ID; it was replaced with the other
 *   store's valid copy (the same ID). Reported by the call that repaired it.
 * - DEVICEID_FLAG_MIRRORED: in the auto backend, answered by the file mirror without asking the
 *   keyring over D-Bus, because the keyring was seen holding the same ID less than the re-check
 *   interval ago (DEVICEID_MIRROR_RECHECK_S, a day by default; the source is then
 *   DEVICEID_SOURCE_KEYRING). See docs/STATE.md, rule 5.
 * - DEVICEID_FLAG_PROVISIONAL: in the auto backend, the ID is kept only in the file store while no
 *   keyring could be asked, and no keyring ever confirmed it: if a keyring that answers later holds
 *   another ID for the same key, that one wins. Choose the file backend where no keyring will
 *   ever be. See docs/STATE.md, rules 3 and 4.
 * - DEVICEID_FLAG_APP_DATA_ONLY: in a Flatpak or Snap, the ID is kept only in the app's own data
 *   (~/.var/app/ID, SNAP_USER_DATA), which removing the app's data removes: no Secret portal
 *   gave the app its secret (see deviceid_environment_portal()). Where the portal answers, the
 *   app's stable ID is derived from that secret instead (DEVICEID_SOURCE_PORTAL) and survives.
 *   deviceid_identifier_location() says where any answer lives.
 *
 * Returns what deviceid_get() returns: 0, or DEVICEID_E_INVALID_ARGUMENT,
 * DEVICEID_E_BUFFER_TOO_SMALL, DEVICEID_E_LOCKED, DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT,
 * DEVICEID_E_NO_COLLECTION, DEVICEID_E_CORRUPT, DEVICEID_E_IO, DEVICEID_E_PERMISSION,
 * DEVICEID_E_KEYRING, DEVICEID_E_NO_MEMORY.
 */
int deviceid_get_ex(const char *DEVICEID_NULLABLE app_id, char *DEVICEID_NULLABLE out, size_t out_size,
                    int *DEVICEID_NULLABLE source, unsigned int *DEVICEID_NULLABLE flags);

/**
 * Removes the identifier of `app_id` from every store, so that the next deviceid_get() mints a
 * new one. Removing one that does not exist succeeds. Every store that may hold the identifier
 * receives a tombstone, so that no older copy (another data directory's mirror, a backup) is
 * returned or written back afterwards. A store that may hold it and cannot be reached — a locked
 * keyring (DEVICEID_E_LOCKED), one the file store says this user keeps IDs in but that has no
 * session bus here (DEVICEID_E_UNAVAILABLE) — fails the reset before anything is changed.
 *
 * In a sandbox whose Secret portal gives the app its secret, the app's stable ID is derived from
 * that secret, which the host keeps and the app cannot change: deviceid_reset() fails with
 * DEVICEID_E_UNSUPPORTED (a reset kept in the app's files would be undone by removing them).
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_LOCKED, DEVICEID_E_UNAVAILABLE,
 * DEVICEID_E_TIMED_OUT, DEVICEID_E_NO_COLLECTION, DEVICEID_E_CORRUPT (a record in the way that
 * fails validation), DEVICEID_E_IO, DEVICEID_E_PERMISSION, DEVICEID_E_KEYRING,
 * DEVICEID_E_UNSUPPORTED, DEVICEID_E_NO_MEMORY.
 */
int deviceid_reset(const char *DEVICEID_NULLABLE app_id);

/** The name of a DEVICEID_SOURCE_* value ("keyring", "file", "created", "portal"); "unknown" otherwise. */
const char *DEVICEID_NONNULL deviceid_source_name(int source);

/* ---- Environment: sandboxes, containers, and what survives what ------------------------------ */

#define DEVICEID_ENVIRONMENT_HOST      1  /* no sandbox, no container */
#define DEVICEID_ENVIRONMENT_FLATPAK   2  /* a Flatpak app (/.flatpak-info) */
#define DEVICEID_ENVIRONMENT_SNAP      3  /* a Snap (SNAP_NAME) */
#define DEVICEID_ENVIRONMENT_CONTAINER 4  /* a container (docker, podman, systemd-nspawn, lxc, ...) */

#define DEVICEID_LOCATION_KEYRING    1  /* the user's Secret Service */
#define DEVICEID_LOCATION_PORTAL     2  /* derived from the Secret portal's secret for the sandboxed app */
#define DEVICEID_LOCATION_APP_DATA   3  /* files in the sandboxed app's own data: removed with it */
#define DEVICEID_LOCATION_HOST       4  /* files on this machine, outside containers and app data */
#define DEVICEID_LOCATION_CONTAINER  5  /* the container's own files or a tmpfs: removed with it */
#define DEVICEID_LOCATION_VOLUME     6  /* a volume mounted into the container: outlives it */
#define DEVICEID_LOCATION_BIND_MOUNT 7  /* a host directory bound into the container: outlives it */

#define DEVICEID_SURVIVES_APP_DATA_REMOVAL  1u  /* flatpak uninstall --delete-data, snap remove */
#define DEVICEID_SURVIVES_CONTAINER_REMOVAL 2u  /* docker rm */

#define DEVICEID_PORTAL_NOT_ASKED 0  /* not in a sandbox, or not the auto backend */
#define DEVICEID_PORTAL_SECRET    1  /* the Secret portal gave the app its secret */
#define DEVICEID_PORTAL_ABSENT    2  /* positively none: no portal, or no Secret back end */
#define DEVICEID_PORTAL_FAILED    3  /* it could not answer: nothing is minted over it */

/**
 * Where this process runs: a DEVICEID_ENVIRONMENT_* value (a sandbox wins over a container).
 *
 * Returns that value (1 or more); it never fails.
 */
int deviceid_environment_kind(void);
/** The name of a DEVICEID_ENVIRONMENT_* value ("host", "flatpak", "snap", "container"); "unknown" otherwise. */
const char *DEVICEID_NONNULL deviceid_environment_kind_name(int kind);

/**
 * The Flatpak app id, the snap's name or the container manager in systemd-detect-virt's words
 * ("docker", "podman", "systemd-nspawn", ...); "" on a host. out_size: DEVICEID_NAME_MAX.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_BUFFER_TOO_SMALL.
 */
int deviceid_environment_name(char *DEVICEID_NULLABLE out, size_t out_size);

/**
 * 1 when the machine ID is weak — not known to be this machine's own: in a container, one the
 * manager did not make for the container (Docker's, baked into the image, is shared by every
 * container made from it), so deviceid_machine_app_specific() is the same in all of them and
 * clone detection cannot tell them apart (stable IDs then carry DEVICEID_FLAG_WEAK) — 0 when
 * not. `reason` (nullable, e.g. 512 bytes) receives why, in words.
 *
 * Returns 1 (weak) or 0 (not), or DEVICEID_E_BUFFER_TOO_SMALL (reason_size cannot hold the
 * reason).
 */
int deviceid_environment_machine_id_weak(char *DEVICEID_NULLABLE reason, size_t reason_size);

/**
 * What the Secret portal said (a DEVICEID_PORTAL_* value), asking it in a sandbox with the auto
 * backend. deviceid_last_error() says why it failed, when it did.
 *
 * Returns that value (0 or more), or DEVICEID_E_INVALID_ARGUMENT (an invalid configuration).
 */
int deviceid_environment_portal(void);
/** The name of a DEVICEID_PORTAL_* value ("not-asked", "secret", "absent", "failed"); "unknown" otherwise. */
const char *DEVICEID_NONNULL deviceid_portal_state_name(int state);

/**
 * Where the file store's files live (a DEVICEID_LOCATION_* value: host, app data, container,
 * volume or bind mount, from /proc/self/mountinfo). `path` (nullable, PATH_MAX bytes) receives
 * the store's directory. `docker run -v ids:/var/lib/deviceid` makes it a volume, which outlives
 * the container (docs/ENVIRONMENTS.md "Containers").
 *
 * Returns that value (1 or more), or DEVICEID_E_INVALID_ARGUMENT (an invalid configuration),
 * DEVICEID_E_BUFFER_TOO_SMALL, DEVICEID_E_PERMISSION (no store directory can be named: no home).
 */
int deviceid_environment_store_location(char *DEVICEID_NULLABLE path, size_t path_size);

/**
 * Where an app's stable ID is kept here when no store holds one yet (a DEVICEID_LOCATION_* value:
 * the portal, the keyring, or the file store's location), asking the portal and the keyring.
 *
 * Returns that value (1 or more), or DEVICEID_E_INVALID_ARGUMENT (an invalid configuration),
 * DEVICEID_E_PERMISSION (no store directory can be named).
 */
int deviceid_environment_stable_id_location(void);

/**
 * Where the identifier of `scope` and `name` (as deviceid_identifier()) lives.
 *
 * Returns a DEVICEID_LOCATION_* value (1 or more), or what deviceid_identifier() returns:
 * DEVICEID_E_OPTED_OUT, DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_LOCKED, DEVICEID_E_UNAVAILABLE,
 * DEVICEID_E_TIMED_OUT, DEVICEID_E_NO_COLLECTION, DEVICEID_E_CORRUPT, DEVICEID_E_IO,
 * DEVICEID_E_PERMISSION, DEVICEID_E_KEYRING, DEVICEID_E_NO_MEMORY.
 */
int deviceid_identifier_location(int scope, const char *DEVICEID_NULLABLE name);

/** The name of a DEVICEID_LOCATION_* value ("keyring", "portal", "app-data", "host", "container", "volume", "bind-mount"); "unknown" otherwise. */
const char *DEVICEID_NONNULL deviceid_location_name(int location);
/** The DEVICEID_SURVIVES_* events an ID at `location` outlives; 0 for an unknown location. */
unsigned int deviceid_location_survives(int location);

/* ---- Identifiers per vendor, for advertising, and shared (identifierForVendor, IDFA, OpenUDID) -- */

#define DEVICEID_SCOPE_APP         1  /* one per app id: deviceid_get() */
#define DEVICEID_SCOPE_VENDOR      2  /* one per vendor id, shared by the vendor's apps */
#define DEVICEID_SCOPE_ADVERTISING 3  /* one per user, resettable, with "limit tracking" */
#define DEVICEID_SCOPE_OPENUDID    4  /* one shared by every app of the user, per-app opt-out */

/**
 * The identifier of `scope` (a DEVICEID_SCOPE_* value). `name` is the app id for
 * DEVICEID_SCOPE_APP and DEVICEID_SCOPE_OPENUDID, the vendor id for DEVICEID_SCOPE_VENDOR, and
 * ignored (NULL allowed) for DEVICEID_SCOPE_ADVERTISING. All are kept like deviceid_get()'s:
 * keyring plus mirror, minted only when every store said "none". `source` and `flags` as in
 * deviceid_get_ex(), both nullable.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (also an unknown scope), DEVICEID_E_BUFFER_TOO_SMALL,
 * DEVICEID_E_LOCKED, DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT, DEVICEID_E_NO_COLLECTION,
 * DEVICEID_E_CORRUPT, DEVICEID_E_IO, DEVICEID_E_PERMISSION, DEVICEID_E_KEYRING,
 * DEVICEID_E_NO_MEMORY, and DEVICEID_E_OPTED_OUT for an OpenUDID opt-out (then `out` holds the
 * all-zero UUID, so that code ignoring the status gets no real ID).
 */
int deviceid_identifier(int scope, const char *DEVICEID_NULLABLE name, char *DEVICEID_NULLABLE out,
                        size_t out_size, int *DEVICEID_NULLABLE source, unsigned int *DEVICEID_NULLABLE flags);

/**
 * Forgets the identifier of `scope`; the next request mints a new one. `name` as for
 * deviceid_identifier(), and ignored for DEVICEID_SCOPE_OPENUDID too (the shared ID is reset for
 * every app).
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (also an unknown scope), DEVICEID_E_LOCKED,
 * DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT, DEVICEID_E_NO_COLLECTION, DEVICEID_E_CORRUPT,
 * DEVICEID_E_IO, DEVICEID_E_PERMISSION, DEVICEID_E_KEYRING, DEVICEID_E_UNSUPPORTED,
 * DEVICEID_E_NO_MEMORY.
 */
int deviceid_identifier_reset(int scope, const char *DEVICEID_NULLABLE name);

/**
 * identifierForVendor: the same UUID for every app passing the same `vendor_id`; unrelated
 * across vendors and to the machine ID. deviceid_vendor_reset() is "all the vendor's apps were
 * removed".
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_BUFFER_TOO_SMALL (deviceid_vendor_id()),
 * DEVICEID_E_LOCKED, DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT, DEVICEID_E_NO_COLLECTION,
 * DEVICEID_E_CORRUPT, DEVICEID_E_IO, DEVICEID_E_PERMISSION, DEVICEID_E_KEYRING,
 * DEVICEID_E_NO_MEMORY.
 */
int deviceid_vendor_id(const char *DEVICEID_NULLABLE vendor_id, char *DEVICEID_NULLABLE out, size_t out_size);
int deviceid_vendor_reset(const char *DEVICEID_NULLABLE vendor_id);

/**
 * advertisingIdentifier: one random UUID per user. While tracking is limited it reads as
 * 00000000-0000-0000-0000-000000000000 (as on iOS) and the real one is kept for when the limit is
 * lifted. deviceid_advertising_reset() mints a new one (hidden too while limited).
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_BUFFER_TOO_SMALL
 * (deviceid_advertising_id()), DEVICEID_E_LOCKED, DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT,
 * DEVICEID_E_NO_COLLECTION, DEVICEID_E_CORRUPT, DEVICEID_E_IO, DEVICEID_E_PERMISSION,
 * DEVICEID_E_KEYRING, DEVICEID_E_NO_MEMORY.
 */
int deviceid_advertising_id(char *DEVICEID_NULLABLE out, size_t out_size);
int deviceid_advertising_reset(void);
/**
 * Turns "limit ad tracking" on (non-zero) or off (0); persistent, kept like the IDs. The change
 * reaches every store that may hold settings or fails (DEVICEID_E_UNAVAILABLE, DEVICEID_E_LOCKED…)
 * changing nothing; the latest change wins wherever it is read.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_LOCKED, DEVICEID_E_UNAVAILABLE,
 * DEVICEID_E_TIMED_OUT, DEVICEID_E_NO_COLLECTION, DEVICEID_E_CORRUPT, DEVICEID_E_IO,
 * DEVICEID_E_PERMISSION, DEVICEID_E_KEYRING, DEVICEID_E_NO_MEMORY.
 */
int deviceid_advertising_set_limited(int limited);
/**
 * Whether advertising tracking is limited.
 *
 * Returns 1 (limited) or 0 (not), or DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_LOCKED,
 * DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT, DEVICEID_E_NO_COLLECTION, DEVICEID_E_CORRUPT,
 * DEVICEID_E_IO, DEVICEID_E_PERMISSION, DEVICEID_E_KEYRING, DEVICEID_E_NO_MEMORY.
 */
int deviceid_advertising_is_limited(void);

/**
 * OpenUDID: one UUID shared by every app of the user, in any language; the first app to ask
 * creates it. An app that opted out gets DEVICEID_E_OPTED_OUT and the all-zero UUID in `out`.
 *
 * Returns 0, or DEVICEID_E_OPTED_OUT, DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_BUFFER_TOO_SMALL,
 * DEVICEID_E_LOCKED, DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT, DEVICEID_E_NO_COLLECTION,
 * DEVICEID_E_CORRUPT, DEVICEID_E_IO, DEVICEID_E_PERMISSION, DEVICEID_E_KEYRING,
 * DEVICEID_E_NO_MEMORY.
 */
int deviceid_openudid(const char *DEVICEID_NULLABLE app_id, char *DEVICEID_NULLABLE out, size_t out_size);
/**
 * Opts `app_id` out of OpenUDID (non-zero) or back in (0); persistent, and durable as
 * deviceid_advertising_set_limited() is.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_LOCKED, DEVICEID_E_UNAVAILABLE,
 * DEVICEID_E_TIMED_OUT, DEVICEID_E_NO_COLLECTION, DEVICEID_E_CORRUPT, DEVICEID_E_IO,
 * DEVICEID_E_PERMISSION, DEVICEID_E_KEYRING, DEVICEID_E_NO_MEMORY.
 */
int deviceid_openudid_set_opt_out(const char *DEVICEID_NULLABLE app_id, int opt_out);

/* ---- UUIDs -------------------------------------------------------------------------------------- */

#define DEVICEID_FORMAT_UPPERCASE 1u  /* "1B4E28BA-…", the form iOS prints */
#define DEVICEID_FORMAT_COMPACT   2u  /* no separators: 32 hex digits (systemd's form), "AABBCCDDEEFF" */

/**
 * A random version-4 UUID from the kernel's CSPRNG: canonical lowercase text, or as `format`
 * (DEVICEID_FORMAT_* bits) asks. out_size: DEVICEID_UUID_STRING_MAX.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (also unknown format bits), DEVICEID_E_BUFFER_TOO_SMALL,
 * DEVICEID_E_IO (the kernel's random source failed).
 */
int deviceid_uuid_generate(char *DEVICEID_NULLABLE out, size_t out_size, unsigned int format);

/**
 * Parses a UUID: 36 characters with dashes (8-4-4-4-12) or 32 hex digits, either case. Braces,
 * "urn:uuid:", whitespace and anything else are refused with DEVICEID_E_INVALID_ARGUMENT.
 * bytes: receives the 16 bytes (most significant first).
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT.
 */
int deviceid_uuid_parse(const char *DEVICEID_NULLABLE text, unsigned char *DEVICEID_NULLABLE bytes);

/**
 * Formats 16 bytes as UUID text (see DEVICEID_FORMAT_*).
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_BUFFER_TOO_SMALL.
 */
int deviceid_uuid_format(const unsigned char *DEVICEID_NULLABLE bytes, unsigned int format,
                         char *DEVICEID_NULLABLE out, size_t out_size);

/* ---- MAC address and digests ----------------------------------------------------------------- */

#define DEVICEID_MAC_PERMANENT 1u  /* the permanent (burned-in) address, not a current one */
#define DEVICEID_MAC_WEAK      2u  /* locally administered (bit 0x02): shared by many machines */

/**
 * The primary hardware address: of `interface` when not NULL, else chosen among the interfaces
 * backed by a device (not lo, bridges, veth, docker, tun/tap): universally administered before
 * locally administered, permanent before current, then by interface name — never by enumeration
 * order. The permanent address (ETHTOOL_GPERMADDR) is preferred over the current one. All-zero,
 * broadcast, multicast addresses and 02:00:00:00:00:00 are never returned.
 *
 * format:       0 for "AA:BB:CC:DD:EE:FF", DEVICEID_FORMAT_COMPACT for "AABBCCDDEEFF".
 * out:          DEVICEID_MAC_STRING_MAX bytes.
 * interface_out: when not NULL, receives the interface's name (interface_size bytes,
 *               DEVICEID_INTERFACE_NAME_MAX suffices).
 * properties:   when not NULL, receives DEVICEID_MAC_* bits.
 *
 * Returns 0, or DEVICEID_E_NOT_FOUND (no such interface, or no usable address),
 * DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_BUFFER_TOO_SMALL, DEVICEID_E_IO.
 */
int deviceid_mac_address(const char *DEVICEID_NULLABLE interface, unsigned int format,
                         char *DEVICEID_NULLABLE out, size_t out_size,
                         char *DEVICEID_NULLABLE interface_out, size_t interface_size,
                         unsigned int *DEVICEID_NULLABLE properties);

/**
 * iOS's MD5(MAC) and MD5(MAC + bundle id), as lowercase hex: MD5 over the 12 uppercase hex
 * digits of the address chosen as by deviceid_mac_address() ("AABBCCDDEEFF"), followed by the
 * UTF-8 bytes of `bundle_id` when it is not NULL. out: DEVICEID_MD5_HEX_MAX bytes. `properties`
 * as deviceid_mac_address(): a weak address makes a weak identifier.
 *
 * Returns 0, or DEVICEID_E_NOT_FOUND, DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_BUFFER_TOO_SMALL,
 * DEVICEID_E_IO, DEVICEID_E_UNSUPPORTED (OpenSSL refuses MD5: FIPS mode), DEVICEID_E_UNAVAILABLE
 * (libcrypto.so.3 cannot be loaded), DEVICEID_E_NO_MEMORY.
 */
int deviceid_mac_md5(const char *DEVICEID_NULLABLE interface, const char *DEVICEID_NULLABLE bundle_id,
                     char *DEVICEID_NULLABLE out, size_t out_size, unsigned int *DEVICEID_NULLABLE properties);

#define DEVICEID_HASH_MD5    1
#define DEVICEID_HASH_SHA256 2

/**
 * Lowercase hex digest of `size` bytes at `data` (NULL allowed when size is 0) with `algorithm`
 * (DEVICEID_HASH_*). out: DEVICEID_MD5_HEX_MAX or DEVICEID_SHA256_HEX_MAX bytes.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (also an unknown algorithm), DEVICEID_E_BUFFER_TOO_SMALL,
 * DEVICEID_E_TOO_LARGE (size over 2^31), DEVICEID_E_UNSUPPORTED (MD5 in FIPS mode),
 * DEVICEID_E_UNAVAILABLE (libcrypto.so.3 cannot be loaded), DEVICEID_E_NO_MEMORY.
 */
int deviceid_hash_hex(int algorithm, const void *DEVICEID_NULLABLE data, size_t size,
                      char *DEVICEID_NULLABLE out, size_t out_size);

/**
 * Hashing a push token (or any token) with a bundle id: hex(H(token bytes ‖ UTF-8 bundle id)).
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_BUFFER_TOO_SMALL, DEVICEID_E_TOO_LARGE,
 * DEVICEID_E_UNSUPPORTED, DEVICEID_E_UNAVAILABLE, DEVICEID_E_NO_MEMORY.
 */
int deviceid_token_hash(int algorithm, const void *DEVICEID_NULLABLE token, size_t token_size,
                        const char *DEVICEID_NULLABLE bundle_id, char *DEVICEID_NULLABLE out, size_t out_size);

/* ---- Machine identity (UDID) --------------------------------------------------------------------- */

/**
 * The app-specific machine ID, byte-identical to systemd's sd_id128_get_machine_app_specific():
 * HMAC-SHA256 keyed with the machine ID's 16 bytes over the app ID's 16 bytes, first 16 bytes,
 * version 4, RFC 9562 variant. Stable across reinstalls, unlinkable across apps, and it does not
 * reveal the machine ID.
 *
 * app_id: a UUID (dashed or 32 hex digits, as systemd-id128 takes it; not all zeros), or any other
 *         name ("com.example.app"), which maps to the first 16 bytes of
 *         SHA-256("deviceid.app-id:" + name).
 * format: DEVICEID_FORMAT_* bits; DEVICEID_FORMAT_COMPACT gives systemd-id128's 32-digit form.
 *
 * The machine ID is read from /etc/machine-id, then /var/lib/dbus/machine-id (or the file named
 * by DEVICEID_MACHINE_ID_PATH), once per process.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_BUFFER_TOO_SMALL, DEVICEID_E_NOT_FOUND (no
 * machine-id file), DEVICEID_E_INVALID_MACHINE_ID, DEVICEID_E_PERMISSION, DEVICEID_E_IO.
 */
int deviceid_machine_app_specific(const char *DEVICEID_NULLABLE app_id, unsigned int format,
                                  char *DEVICEID_NULLABLE out, size_t out_size);

/**
 * The RAW machine ID — the same for every app, and systemd asks that it not leave the machine.
 * Prefer deviceid_machine_app_specific().
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_BUFFER_TOO_SMALL, DEVICEID_E_NOT_FOUND,
 * DEVICEID_E_INVALID_MACHINE_ID, DEVICEID_E_PERMISSION, DEVICEID_E_IO.
 */
int deviceid_machine_id_raw(unsigned int format, char *DEVICEID_NULLABLE out, size_t out_size);

/**
 * The RAW firmware (DMI) product UUID from /sys/class/dmi/id/product_uuid. Usually readable by
 * root only.
 *
 * Returns 0, or DEVICEID_E_PERMISSION (not root), DEVICEID_E_NOT_FOUND (the firmware has none),
 * DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_BUFFER_TOO_SMALL, DEVICEID_E_CORRUPT (not a UUID),
 * DEVICEID_E_IO.
 */
int deviceid_product_uuid_raw(unsigned int format, char *DEVICEID_NULLABLE out, size_t out_size);

/* ---- Keychain-style secrets ----------------------------------------------------------------- */

/*
 * Items are filed under the Secret Service attributes `service` and `username` (the convention of
 * secret-tool and the common keyring clients): what is stored here under service S and account A
 * is printed by `secret-tool lookup service S username A`, and what secret-tool stored is read
 * here. Services starting with "deviceid." are reserved. Secrets go only to the selected backend
 * and are never copied out of the keyring. In auto mode a secret goes to the keyring when one
 * takes it, or in a Flatpak or Snap sandbox to a file sealed with the app's key from the Secret
 * portal; with neither, deviceid_secret_store() fails with DEVICEID_E_NO_KEYRING and writes
 * nothing. A secret is written to a file in plain text (mode 0600, in the store directory) only
 * with the file backend chosen (deviceid_set_backend(), DEVICEID_BACKEND=file). A plaintext file
 * written before (by 0.3.0, or by the file backend) is still read where the keyring has no copy,
 * and a store that reaches the keyring deletes it.
 */

/**
 * Stores `size` bytes at `data` (binary-safe; size 0 allowed, then data may be NULL), replacing
 * the item with the same service and account.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_TOO_LARGE (size > DEVICEID_SECRET_MAX),
 * DEVICEID_E_NO_KEYRING (auto mode, no keyring to take it: nothing written), DEVICEID_E_LOCKED,
 * DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT, DEVICEID_E_NO_COLLECTION, DEVICEID_E_KEYRING,
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
 * DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT, DEVICEID_E_NO_COLLECTION, DEVICEID_E_CORRUPT,
 * DEVICEID_E_TOO_LARGE (a stored secret over DEVICEID_SECRET_MAX), DEVICEID_E_KEYRING,
 * DEVICEID_E_IO, DEVICEID_E_PERMISSION, DEVICEID_E_NO_MEMORY.
 */
int deviceid_secret_lookup(const char *DEVICEID_NULLABLE service, const char *DEVICEID_NULLABLE account,
                           void *DEVICEID_NULLABLE *DEVICEID_NULLABLE data, size_t *DEVICEID_NULLABLE size);

/**
 * Deletes the secret from every store of the backend.
 *
 * Returns 0, or DEVICEID_E_NOT_FOUND when no store had it, DEVICEID_E_INVALID_ARGUMENT,
 * DEVICEID_E_LOCKED (nothing deleted), DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT,
 * DEVICEID_E_NO_COLLECTION, DEVICEID_E_KEYRING, DEVICEID_E_IO, DEVICEID_E_PERMISSION,
 * DEVICEID_E_NO_MEMORY.
 */
int deviceid_secret_delete(const char *DEVICEID_NULLABLE service, const char *DEVICEID_NULLABLE account);

/**
 * Wipes and frees memory the library allocated (deviceid_secret_lookup()'s `*data`). NULL is
 * ignored. Passing any other pointer, or the same pointer twice, is undefined.
 */
void deviceid_free(void *DEVICEID_NULLABLE p);

/* ---- The hardware-bound ID and attestation (TPM 2.0) ------------------------------------------ */

/*
 * An ID no store keeps: the TPM derives a key from its own seed and the app id, and the ID is a
 * hash of that key's Name (docs/HARDWARE-ID.md). The same on every call on one TPM, after every
 * store, the home directory or the OS is wiped; another, unlinkable one per app id; a new one only
 * when the TPM is cleared or replaced. It reveals nothing of the endorsement key.
 *
 * The TPM is the kernel's resource manager, /dev/tpmrm0, unless DEVICEID_TPM_TCTI names another
 * ("device:/dev/tpmrmN", or "swtpm:path=SOCKET" for a software TPM); /dev/tpm0 is never used.
 * tpm2-tss (libtss2-esys.so.0 and the TCTI module) is loaded on first use. Each call is bounded by
 * the deadline of deviceid_set_timeout_ms() (at least 60 s for deviceid_attest_activate(), which
 * creates the RSA endorsement key). When a TPM command or connection fails, tpm2-tss itself may
 * write a warning line to stderr; DeviceID does not change the environment to prevent it
 * (TSS2_LOG=all+none does).
 */

/**
 * Writes this TPM's hardware-bound ID for `app_id` to `out`.
 *
 * `out` takes DEVICEID_UUID_STRING_MAX bytes: a version-8 UUID. It is kept nowhere, on disk or
 * in memory: each call asks the TPM (one conversation, about 7 ms on swtpm), so the ID follows a
 * cleared or replaced TPM, or a new owner password, at the next call, and the "hardware_id" of
 * deviceid_attest() in the same process is always the same.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (a bad app id, or DEVICEID_TPM_TCTI naming /dev/tpm0),
 * DEVICEID_E_BUFFER_TOO_SMALL, DEVICEID_E_UNAVAILABLE (no TPM, no tpm2-tss, or a TPM in failure
 * mode), DEVICEID_E_PERMISSION (the resource manager is root:tss 0660: the user is not in the tss
 * group; or an owner hierarchy password), DEVICEID_E_LOCKED (dictionary-attack lockout),
 * DEVICEID_E_TIMED_OUT, DEVICEID_E_UNSUPPORTED (DEVICEID_TPM_TCTI names another TCTI),
 * DEVICEID_E_IO (the TPM refused a command), DEVICEID_E_NO_MEMORY.
 */
int deviceid_hardware_id(const char *DEVICEID_NULLABLE app_id, char *DEVICEID_NULLABLE out, size_t out_size);

/*
 * Attestation (TCG Privacy-CA model; wire format v1: one JSON object per message, binary fields
 * in padded base64, TPM structures in their marshalled form — docs/HARDWARE-ID.md). Each app id
 * has its own attestation key (AK), derived by the TPM like the app key, so that no two apps'
 * servers see a common key:
 *   1. deviceid_attest_enrolment(): the app's enrolment request for the attestation CA (it
 *      carries the EK certificate, which only that CA sees);
 *   2. deviceid_attest_activate(): the response to the CA's challenge (TPM2_ActivateCredential),
 *      after which the CA issues an AK certificate message for the app;
 *   3. deviceid_attest(): evidence for the app's server — TPM2_Certify of the app's key by the
 *      app's AK over the server's nonce — checked by the server with the deviceid_verifier Python
 *      package.
 * Each message is returned in `*out`, NUL-terminated, allocated by the library: free it with
 * deviceid_free(). On failure `*out` is NULL.
 */

/**
 * Makes the enrolment request of `app_id`'s attestation key for the attestation CA.
 *
 * {"v": 1, "type": "deviceid.enrolment-request", "app_id": …, "ek_certificate": …, "ak_public": …}:
 * the app id, the EK certificate (DER) and the app's attestation key's public area.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_NOT_FOUND (the TPM has no RSA EK
 * certificate at NV index 0x01c00002), DEVICEID_E_UNAVAILABLE, DEVICEID_E_PERMISSION,
 * DEVICEID_E_LOCKED, DEVICEID_E_TIMED_OUT, DEVICEID_E_UNSUPPORTED, DEVICEID_E_TOO_LARGE,
 * DEVICEID_E_IO, DEVICEID_E_NO_MEMORY.
 */
int deviceid_attest_enrolment(const char *DEVICEID_NULLABLE app_id, char *DEVICEID_NULLABLE *DEVICEID_NULLABLE out);

/**
 * Answers the CA's enrolment challenge for `app_id`'s attestation key.
 *
 * The challenge is {"v": 1, "type": "deviceid.enrolment-challenge", ...}; the answer,
 * {"v": 1, "type": "deviceid.enrolment-response", "id": …, "credential": …}, holds what
 * TPM2_ActivateCredential recovered.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (not a challenge, or one this TPM cannot open:
 * made for another TPM or another attestation key), DEVICEID_E_UNSUPPORTED (another wire format
 * version, or TCTI), DEVICEID_E_UNAVAILABLE, DEVICEID_E_PERMISSION, DEVICEID_E_LOCKED,
 * DEVICEID_E_TIMED_OUT, DEVICEID_E_IO, DEVICEID_E_NO_MEMORY.
 */
int deviceid_attest_activate(const char *DEVICEID_NULLABLE app_id, const char *DEVICEID_NULLABLE challenge,
                             char *DEVICEID_NULLABLE *DEVICEID_NULLABLE out);

/**
 * Makes evidence for the server of `app_id`: the app's attestation key certifies the app's key.
 *
 * TPM2_Certify over `nonce` (1 to 64 bytes the server chose; 32 random bytes are usual) gives
 * {"v": 1, "type": "deviceid.attestation", "app_id": …,
 * "hardware_id": …, "nonce": …, "app_public": …, "ak_public": …, "attest": …, "signature": …}, with
 * "ak_certificate" when `ak_certificate` (the CA's {"type": "deviceid.ak-certificate"} message, or
 * NULL) is given. "hardware_id" is what deviceid_hardware_id() gives for `app_id`.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_UNSUPPORTED, DEVICEID_E_UNAVAILABLE,
 * DEVICEID_E_PERMISSION, DEVICEID_E_LOCKED, DEVICEID_E_TIMED_OUT, DEVICEID_E_IO,
 * DEVICEID_E_NO_MEMORY.
 */
int deviceid_attest(const char *DEVICEID_NULLABLE app_id, const void *DEVICEID_NULLABLE nonce, size_t nonce_size,
                    const char *DEVICEID_NULLABLE ak_certificate, char *DEVICEID_NULLABLE *DEVICEID_NULLABLE out);

/* ---- Contexts: a configuration of the caller's own ------------------------------------------- */

/*
 * The functions above use one process-wide configuration (deviceid_set_backend() and the
 * DEVICEID_* variables). A library inside a larger program, or a program keeping two stores apart,
 * makes a context instead: its own backend, store directory, deadline and interactive mode, and
 * its own cache of answers. A NULL context names the process-wide configuration: a
 * deviceid_context_* function given NULL is its namesake without "context_". Contexts configured
 * alike use the same stores, so they answer with the same IDs, and a reset through any of them
 * is seen by the next call through every other (and the process-wide one).
 *
 *     deviceid_context *ctx;
 *     if (deviceid_context_new(&ctx) == 0) {
 *         deviceid_context_set_backend(ctx, DEVICEID_BACKEND_FILE);
 *         deviceid_context_set_store_dir(ctx, "/var/lib/example/ids");
 *         r = deviceid_context_identifier(ctx, DEVICEID_SCOPE_APP, "com.example.app", id, sizeof id, NULL, NULL);
 *         deviceid_context_free(ctx);
 *     }
 */
typedef struct deviceid_context deviceid_context;

/**
 * Makes a context, configured from the environment as the process-wide configuration starts
 * (DEVICEID_BACKEND, DEVICEID_TIMEOUT_MS, DEVICEID_STORE_DIR, DEVICEID_INTERACTIVE); the setters
 * below change it and nothing else. A context may be used from several threads at once, and in
 * a forked child. Release it with deviceid_context_free().
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (out is NULL).
 */
int deviceid_context_new(deviceid_context *DEVICEID_NULLABLE *DEVICEID_NULLABLE out);

/**
 * Releases a context; NULL is ignored. A call still running on the context in another thread
 * finishes first with the context kept alive; using the pointer after this is undefined.
 */
void deviceid_context_free(deviceid_context *DEVICEID_NULLABLE ctx);

/**
 * The context's settings, as deviceid_set_backend(), deviceid_get_backend(),
 * deviceid_set_timeout_ms(), deviceid_set_store_dir(), deviceid_set_interactive() and
 * deviceid_get_interactive() set and read the process-wide ones.
 *
 * Returns 0 (the getters: their value, 0 or more), or DEVICEID_E_INVALID_ARGUMENT.
 */
int deviceid_context_set_backend(deviceid_context *DEVICEID_NULLABLE ctx, int backend);
int deviceid_context_get_backend(deviceid_context *DEVICEID_NULLABLE ctx);
int deviceid_context_set_timeout_ms(deviceid_context *DEVICEID_NULLABLE ctx, unsigned int milliseconds);
int deviceid_context_set_store_dir(deviceid_context *DEVICEID_NULLABLE ctx, const char *DEVICEID_NULLABLE path);
int deviceid_context_set_interactive(deviceid_context *DEVICEID_NULLABLE ctx, int interactive,
                                     unsigned int timeout_ms);
int deviceid_context_get_interactive(deviceid_context *DEVICEID_NULLABLE ctx);

/**
 * deviceid_identifier(), deviceid_identifier_reset() and deviceid_identifier_location() in the
 * context's configuration: the same rules, the same stores when the configurations agree.
 *
 * Returns 0 (deviceid_context_identifier_location(): a DEVICEID_LOCATION_* value), or
 * DEVICEID_E_OPTED_OUT, DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_BUFFER_TOO_SMALL,
 * DEVICEID_E_LOCKED, DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT, DEVICEID_E_NO_COLLECTION,
 * DEVICEID_E_CORRUPT, DEVICEID_E_IO, DEVICEID_E_PERMISSION, DEVICEID_E_KEYRING,
 * DEVICEID_E_UNSUPPORTED, DEVICEID_E_NO_MEMORY.
 */
int deviceid_context_identifier(deviceid_context *DEVICEID_NULLABLE ctx, int scope, const char *DEVICEID_NULLABLE name,
                                char *DEVICEID_NULLABLE out, size_t out_size, int *DEVICEID_NULLABLE source,
                                unsigned int *DEVICEID_NULLABLE flags);
int deviceid_context_identifier_reset(deviceid_context *DEVICEID_NULLABLE ctx, int scope,
                                      const char *DEVICEID_NULLABLE name);
int deviceid_context_identifier_location(deviceid_context *DEVICEID_NULLABLE ctx, int scope,
                                         const char *DEVICEID_NULLABLE name);

/**
 * deviceid_secret_store(), deviceid_secret_lookup() and deviceid_secret_delete() in the
 * context's configuration.
 *
 * Returns 0, or DEVICEID_E_NOT_FOUND (lookup, delete), DEVICEID_E_NO_KEYRING (store),
 * DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_TOO_LARGE, DEVICEID_E_LOCKED, DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT,
 * DEVICEID_E_NO_COLLECTION, DEVICEID_E_CORRUPT, DEVICEID_E_KEYRING, DEVICEID_E_IO,
 * DEVICEID_E_PERMISSION, DEVICEID_E_NO_MEMORY.
 */
int deviceid_context_secret_store(deviceid_context *DEVICEID_NULLABLE ctx, const char *DEVICEID_NULLABLE service,
                                  const char *DEVICEID_NULLABLE account, const void *DEVICEID_NULLABLE data,
                                  size_t size);
int deviceid_context_secret_lookup(deviceid_context *DEVICEID_NULLABLE ctx, const char *DEVICEID_NULLABLE service,
                                   const char *DEVICEID_NULLABLE account,
                                   void *DEVICEID_NULLABLE *DEVICEID_NULLABLE data, size_t *DEVICEID_NULLABLE size);
int deviceid_context_secret_delete(deviceid_context *DEVICEID_NULLABLE ctx, const char *DEVICEID_NULLABLE service,
                                   const char *DEVICEID_NULLABLE account);

/**
 * deviceid_hardware_id(), deviceid_attest_enrolment(), deviceid_attest_activate() and
 * deviceid_attest() with the context's deadline.
 *
 * Returns 0, or what the namesake returns: DEVICEID_E_INVALID_ARGUMENT,
 * DEVICEID_E_BUFFER_TOO_SMALL (hardware ID), DEVICEID_E_NOT_FOUND (enrolment),
 * DEVICEID_E_UNAVAILABLE, DEVICEID_E_PERMISSION, DEVICEID_E_LOCKED, DEVICEID_E_TIMED_OUT,
 * DEVICEID_E_UNSUPPORTED, DEVICEID_E_TOO_LARGE (enrolment), DEVICEID_E_IO, DEVICEID_E_NO_MEMORY.
 */
int deviceid_context_hardware_id(deviceid_context *DEVICEID_NULLABLE ctx, const char *DEVICEID_NULLABLE app_id,
                                 char *DEVICEID_NULLABLE out, size_t out_size);
int deviceid_context_attest_enrolment(deviceid_context *DEVICEID_NULLABLE ctx, const char *DEVICEID_NULLABLE app_id,
                                      char *DEVICEID_NULLABLE *DEVICEID_NULLABLE out);
int deviceid_context_attest_activate(deviceid_context *DEVICEID_NULLABLE ctx, const char *DEVICEID_NULLABLE app_id,
                                     const char *DEVICEID_NULLABLE challenge,
                                     char *DEVICEID_NULLABLE *DEVICEID_NULLABLE out);
int deviceid_context_attest(deviceid_context *DEVICEID_NULLABLE ctx, const char *DEVICEID_NULLABLE app_id,
                            const void *DEVICEID_NULLABLE nonce, size_t nonce_size,
                            const char *DEVICEID_NULLABLE ak_certificate, char *DEVICEID_NULLABLE *DEVICEID_NULLABLE out);

#ifdef __cplusplus
}
#endif

#endif /* DEVICEID_H */
