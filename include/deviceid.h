/*
 * deviceid.h — a stable, private identifier for the device a program runs on, kept in the
 * user's keyring (Secret Service) or, where none answers, in a private file store.
 *
 *     char id[DEVICEID_UUID_STRING_MAX];
 *     int r = deviceid_get("com.example.app", id, sizeof id);
 *     if (r < 0) fprintf(stderr, "deviceid: %s\n", deviceid_strerror(r));
 *
 * Conventions (after systemd's sd-id128 and sd-bus, and libsodium):
 * - every stateful function takes a deviceid_context first; NULL names the process-wide
 *   configuration (as every sd-bus call takes its bus, NULL the default one);
 * - every function returning int returns 0 (DEVICEID_OK) or a negative DEVICEID_E_* status, or
 *   where its doc says so a value of 0 or more;
 * - names go from the object to what is done to it, deviceid_OBJECT_VERB: deviceid_secret_store(),
 *   deviceid_uuid_parse(), deviceid_context_free(); a call that answers a question is named for
 *   its answer: deviceid_status_name(), deviceid_mac_address(), deviceid_version(). A verb leads
 *   only in the bare verbs (get, reset, attest, assert, free), whose object is the device's own
 *   identifier or key or, for free, any result; in attestation's other steps, deviceid_attest_STEP;
 *   and in the configuration's accessors, deviceid_get_SETTING and deviceid_set_SETTING (and
 *   deviceid_get_environment). The verbs: get, set, reset, free, new, store, lookup, delete,
 *   generate, parse, format, survives, attest, assert (Tests/python/test_docs.py holds every
 *   declared name to this rule);
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
 * The stateless techniques of the iOS era (UUIDs, MAC addresses, digests, the machine ID) are in
 * <deviceid-techniques.h>.
 *
 * Threads: every function may be called from any thread at any time (MT-Safe in attributes(7)
 * terms). Answers are cached per process; a reset or a configuration change on one thread is seen
 * by every thread's next call. deviceid_last_error() is per thread.
 *
 * fork(): a child of a process that used DeviceID (Python multiprocessing, prefork servers) may
 * call every function, even if another thread of the parent was inside one at the fork: the
 * library's locks are made free again in the child (pthread_atfork), no file lock is inherited,
 * and the child reaches the Secret Service over a D-Bus connection of its own (libdbus), never
 * the parent's. One exception: a child forked while another thread was loading an optional
 * library (GLib, libsecret, libcrypto, libdbus, tpm2-tss: at its first call of the kind) has
 * it half loaded, and calls that need a library it does not have whole fail with
 * DEVICEID_E_UNAVAILABLE and words, for the child's life. A deviceid_context made before the
 * fork may be used in the child. A child never holds the parent's TPM connection: the
 * descriptors of a conversation under way at the fork are closed in the child, and the child's
 * own calls open their own. Between fork() and exec() in a multithreaded program, only
 * async-signal-safe functions may be called, and no DeviceID function is one.
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

#define DEVICEID_VERSION_MAJOR 1
#define DEVICEID_VERSION_MINOR 1
#define DEVICEID_VERSION_PATCH 0
#define DEVICEID_VERSION_STRING "1.1.0"

/**
 * The version of the library loaded, "MAJOR.MINOR.PATCH" (static storage, never NULL), which may
 * be newer than the DEVICEID_VERSION_* macros a program was compiled with.
 *
 * Returns the text; it never fails.
 */
const char *DEVICEID_NONNULL deviceid_version(void);

/* ---- Sizes -------------------------------------------------------------------------------- */

/** Bytes for a UUID in text form with its terminating NUL: 36 + 1. */
#define DEVICEID_UUID_STRING_MAX 37U
/** Bytes for the longest name (app id, service, account) with its NUL: 255 + 1. */
#define DEVICEID_NAME_MAX 256U
/** The largest secret deviceid_secret_store() accepts, in bytes. */
#define DEVICEID_SECRET_MAX 65536U
/** Bytes for a path with its NUL (PATH_MAX): deviceid_environment's store_path. */
#define DEVICEID_PATH_MAX 4096U
/** Bytes for a reason in words with its NUL: deviceid_environment's texts (longer ones are cut). */
#define DEVICEID_REASON_MAX 512U
/** The largest attestation message the library reads (a CA's challenge or AK certificate
 *  message, without the NUL), in bytes: deviceid_attest_activate, deviceid_attest, _webauthn. */
#define DEVICEID_MESSAGE_MAX 65536U
/** The nonce deviceid_attest signs: DEVICEID_NONCE_MIN to DEVICEID_NONCE_MAX bytes the
 *  server chose (32 random bytes are usual). */
#define DEVICEID_NONCE_MIN 1U
#define DEVICEID_NONCE_MAX 64U

/* ---- Status codes (stable; the same names in Swift and Python) ---------------------------- */

#define DEVICEID_OK                    0
/* statuses: generated by scripts/gen-abi from Sources/CDeviceIDAPI/statuses.tsv */
/**
 * An argument or the configuration is invalid: NULL, empty, too long, not UTF-8, control
 * characters, an unknown value.
 */
#define DEVICEID_E_INVALID_ARGUMENT (-1)
/** The caller's output buffer cannot hold the answer. */
#define DEVICEID_E_BUFFER_TOO_SMALL (-2)
/** The store answered: there is no such item. */
#define DEVICEID_E_NOT_FOUND (-3)
/** The keyring is locked; nothing was read, written or minted. */
#define DEVICEID_E_LOCKED (-4)
/** No session bus, Secret Service or usable store is reachable from here. */
#define DEVICEID_E_UNAVAILABLE (-5)
/** The store did not answer within the deadline. */
#define DEVICEID_E_TIMED_OUT (-6)
/** Stored data failed validation; it was neither returned nor replaced. */
#define DEVICEID_E_CORRUPT (-7)
/** File store I/O failed (disk full, read-only, an I/O error). */
#define DEVICEID_E_IO (-8)
/** An unsafe location (symlink, foreign owner, writable by others), or access denied. */
#define DEVICEID_E_PERMISSION (-9)
/** Memory or descriptors ran out (also while loading a library); retry later. */
#define DEVICEID_E_NO_MEMORY (-10)
/** The data is over a documented size limit (DEVICEID_SECRET_MAX for secrets). */
#define DEVICEID_E_TOO_LARGE (-11)
/** Not available here (MD5 refused in FIPS mode, a reset of a portal-derived ID). */
#define DEVICEID_E_UNSUPPORTED (-12)
/**
 * The keyring answered with an error of its own: the Secret Service, or in a sandbox the Secret
 * portal.
 */
#define DEVICEID_E_KEYRING (-13)
/** The app opted out of this identifier. */
#define DEVICEID_E_OPTED_OUT (-14)
/** A bug in DeviceID; please report it. */
#define DEVICEID_E_INTERNAL (-15)
/** The machine ID is empty, all zeros or malformed. */
#define DEVICEID_E_INVALID_MACHINE_ID (-16)
/**
 * The Secret Service has no default collection (no keyring, database or wallet is open as the
 * default).
 */
#define DEVICEID_E_NO_COLLECTION (-17)
/** No keyring can keep the secret here and the file backend was not chosen: nothing was written. */
#define DEVICEID_E_NO_KEYRING (-18)
/**
 * A this-device-only record or secret was sealed by another machine's TPM (a copied home, a
 * restored backup on a new machine, a cloned disk) or by this machine's TPM before it was cleared:
 * it cannot be read here, and is not absent.
 */
#define DEVICEID_E_COPIED (-19)
/* end of statuses */

/**
 * A one-line English description of `status`, as messages start ("the keyring is locked");
 * static storage, never NULL. 0 gives "success", unknown values "unknown status".
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

/**
 * Wipes and frees memory the library allocated (deviceid_secret_lookup()'s `*data`, the
 * attestation messages). NULL is ignored. Passing any other pointer, or the same pointer twice,
 * is undefined.
 */
void deviceid_free(void *DEVICEID_NULLABLE p);

/* ---- Contexts: a configuration of the caller's own ------------------------------------------- */

/*
 * Every stateful function takes a context first. NULL names the process-wide configuration, set
 * by the DEVICEID_* variables and the setters given NULL. A library inside a larger program, or a
 * program keeping two stores apart, makes a context of its own: its own backend, store directory,
 * deadline and interactive mode, and its own cache of answers. Contexts configured alike use the
 * same stores, so they answer with the same IDs, and a reset through any of them is seen by the
 * next call through every other (and the process-wide one).
 *
 * A context pointer is a handle the library never dereferences: one that is not a live context
 * of this process (freed, or never made by deviceid_context_new()) gives
 * DEVICEID_E_INVALID_ARGUMENT from every call, and a freed context's handle never names a later
 * one. (A program built for 0.3, whose calls took no context, that reaches 1.0's functions is
 * refused the same way: see docs/MIGRATING.md on loading both.)
 *
 *     deviceid_context *ctx;
 *     if (deviceid_context_new(&ctx) == 0) {
 *         deviceid_set_backend(ctx, DEVICEID_BACKEND_FILE);
 *         deviceid_set_store_dir(ctx, "/var/lib/example/ids");
 *         r = deviceid_identifier(ctx, DEVICEID_SCOPE_APP, "com.example.app", id, sizeof id, NULL, NULL);
 *         deviceid_context_free(ctx);
 *     }
 */
typedef struct deviceid_context deviceid_context;

/**
 * Makes a context, configured from the environment as the process-wide configuration starts
 * (DEVICEID_BACKEND, DEVICEID_TIMEOUT_MS, DEVICEID_STORE_DIR, DEVICEID_INTERACTIVE,
 * DEVICEID_MIRROR_RECHECK_S, DEVICEID_PROTECTION; an invalid one is DEVICEID_E_INVALID_ARGUMENT from the first call that
 * needs the configuration, naming it); the setters change it and nothing else. A context may be
 * used from several threads at once, and in a forked child. Release it with
 * deviceid_context_free().
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (out is NULL), DEVICEID_E_NO_MEMORY (no handle left:
 * handles are never reused, and a 32-bit process has 65535).
 */
int deviceid_context_new(deviceid_context *DEVICEID_NULLABLE *DEVICEID_NULLABLE out);

/**
 * Releases a context; NULL, a context already released and any other pointer are ignored. A call
 * still running on the context in another thread finishes with the context kept alive; calls
 * made with it afterwards give DEVICEID_E_INVALID_ARGUMENT.
 */
void deviceid_context_free(deviceid_context *DEVICEID_NULLABLE ctx);

/* ---- Configuration ------------------------------------------------------------------------ */

#define DEVICEID_BACKEND_AUTO           0  /* keyring if a Secret Service answers, plus the file store */
#define DEVICEID_BACKEND_SECRET_SERVICE 1  /* only the Secret Service; its absence is an error */
#define DEVICEID_BACKEND_FILE           2  /* only the file store */

/**
 * Chooses the backend of `ctx` (NULL: the process's, overriding DEVICEID_BACKEND), and forgets
 * its cached answers.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (an unknown value).
 */
int deviceid_set_backend(deviceid_context *DEVICEID_NULLABLE ctx, int backend);

/**
 * The backend in force in `ctx` (a DEVICEID_BACKEND_* value).
 *
 * Returns that value (0 or more), or DEVICEID_E_INVALID_ARGUMENT (the environment is invalid:
 * one of the variables deviceid_context_new() names).
 */
int deviceid_get_backend(deviceid_context *DEVICEID_NULLABLE ctx);

/**
 * Sets the deadline of each conversation with the Secret Service, the Secret portal or the TPM,
 * 1 to 86400000 ms (default 5000, or DEVICEID_TIMEOUT_MS).
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (out of range).
 */
int deviceid_set_timeout_ms(deviceid_context *DEVICEID_NULLABLE ctx, unsigned int milliseconds);

/**
 * The deadline in force in `ctx`, in milliseconds, in `*milliseconds`.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (milliseconds is NULL, or the environment is invalid:
 * one of the variables deviceid_context_new() names).
 */
int deviceid_get_timeout_ms(deviceid_context *DEVICEID_NULLABLE ctx, unsigned int *DEVICEID_NULLABLE milliseconds);

/**
 * Sets the file store's directory (an absolute path), or with NULL returns to the default, the
 * first that applies: $DEVICEID_STORE_DIR; $STATE_DIRECTORY/deviceid (a systemd service's
 * StateDirectory=, its first entry); $XDG_DATA_HOME/deviceid; for root, /var/lib/deviceid;
 * ~/.local/share/deviceid. Forgets cached answers. Nothing is created or checked until a call
 * uses the store. A variable among these whose bytes are not UTF-8 is refused by that call
 * (DEVICEID_E_INVALID_ARGUMENT, naming it), never read as another path.
 * deviceid_get_environment() says which directory is in force.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (a relative or over-long path, not UTF-8).
 */
int deviceid_set_store_dir(deviceid_context *DEVICEID_NULLABLE ctx, const char *DEVICEID_NULLABLE path);

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
int deviceid_set_interactive(deviceid_context *DEVICEID_NULLABLE ctx, int interactive, unsigned int timeout_ms);

/**
 * Whether interactive mode is on in `ctx`.
 *
 * Returns 1 (on) or 0 (off), or DEVICEID_E_INVALID_ARGUMENT (the environment is invalid: one of
 * the variables deviceid_context_new() names).
 */
int deviceid_get_interactive(deviceid_context *DEVICEID_NULLABLE ctx);

#define DEVICEID_PROTECTION_PORTABLE              0  /* records and secrets travel with the home (the default) */
#define DEVICEID_PROTECTION_THIS_DEVICE_ONLY      1  /* sealed to this machine's TPM; DEVICEID_E_COPIED elsewhere */
#define DEVICEID_PROTECTION_THIS_DEVICE_ONLY_PCR7 2  /* and to its Secure Boot state (PCR 7) */

/**
 * Chooses the protection class of what `ctx` writes (NULL: the process's, overriding
 * DEVICEID_PROTECTION), as a Keychain item's accessibility (docs/STATE.md, "Protection classes"),
 * and forgets its cached answers. With DEVICEID_PROTECTION_THIS_DEVICE_ONLY every identifier
 * minted or rewritten, and every secret stored, is sealed to this machine's TPM (the keyring
 * item's payload and the file alike, since both travel with a copied home): on another machine,
 * or here after tpm2_clear, it reads as DEVICEID_E_COPIED, never as absent, and nothing is
 * minted over it until deviceid_reset() is called there. A portable identifier already kept is
 * sealed in place with the same value. Without a usable TPM (the one deviceid_hardware_id()
 * uses), a call that would seal fails with the TPM's status (DEVICEID_E_UNAVAILABLE,
 * DEVICEID_E_PERMISSION, ...) and writes nothing: there is no host-bound fallback.
 * DEVICEID_PROTECTION_THIS_DEVICE_ONLY_PCR7 seals as THIS_DEVICE_ONLY and binds to PCR 7 (the
 * Secure Boot state) too, as systemd-creds' --tpm2-pcrs=7: once PCR 7 is not what it was at
 * sealing (Secure Boot turned off, keys or a dbx update enrolled), what was sealed reads as
 * DEVICEID_E_COPIED, until PCR 7 returns; a TPM without a SHA-256 PCR bank refuses it
 * (DEVICEID_E_UNSUPPORTED). What is read does not depend on this setting: a sealed record or
 * secret is opened (or is DEVICEID_E_COPIED) under any class.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (an unknown value).
 */
int deviceid_set_protection(deviceid_context *DEVICEID_NULLABLE ctx, int protection);

/**
 * The protection class in force in `ctx` (a DEVICEID_PROTECTION_* value).
 *
 * Returns that value (0 or more), or DEVICEID_E_INVALID_ARGUMENT (the environment is invalid:
 * one of the variables deviceid_context_new() names).
 */
int deviceid_get_protection(deviceid_context *DEVICEID_NULLABLE ctx);

/* ---- The stable identifier ------------------------------------------------------------------ */

#define DEVICEID_SOURCE_KEYRING 1  /* read from the Secret Service */
#define DEVICEID_SOURCE_FILE    2  /* read from the file store */
#define DEVICEID_SOURCE_CREATED 3  /* minted by this call: every store said "none" */
#define DEVICEID_SOURCE_PORTAL  4  /* in a sandbox: derived from the Secret portal's secret for the app */

/**
 * Writes this device's identifier for `app_id` — a canonical lowercase UUID v4, 36 characters
 * and a NUL — to `out`, in the process-wide configuration: deviceid_identifier(NULL,
 * DEVICEID_SCOPE_APP, app_id, out, out_size, NULL, NULL). The same value for every call, process
 * and language, across restarts and reinstalls, until deviceid_reset(). Different app ids get
 * unrelated identifiers.
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
 * DEVICEID_E_COPIED, DEVICEID_E_NO_MEMORY.
 */
int deviceid_get(const char *DEVICEID_NULLABLE app_id, char *DEVICEID_NULLABLE out, size_t out_size);

/**
 * Removes the identifier of `app_id` from every store, so that the next deviceid_get() mints a
 * new one: deviceid_identifier_reset(NULL, DEVICEID_SCOPE_APP, app_id). Removing one that does
 * not exist succeeds. Every store that may hold the identifier receives a tombstone, so that no
 * older copy (another data directory's mirror, a backup) is returned or written back afterwards.
 * A store that may hold it and cannot be reached — a locked keyring (DEVICEID_E_LOCKED), one the
 * file store says this user keeps IDs in but that has no session bus here
 * (DEVICEID_E_UNAVAILABLE) — fails the reset before anything is changed.
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

/* ---- Identifiers per app, per vendor, for advertising, and shared (identifierForVendor, IDFA, OpenUDID) -- */

#define DEVICEID_SCOPE_APP         1  /* one per app id: deviceid_get() */
#define DEVICEID_SCOPE_VENDOR      2  /* one per vendor id, shared by the vendor's apps (identifierForVendor) */
#define DEVICEID_SCOPE_ADVERTISING 3  /* one per user, resettable, with "limit tracking" (advertisingIdentifier) */
#define DEVICEID_SCOPE_OPENUDID    4  /* one shared by every app of the user, per-app opt-out (OpenUDID) */

#define DEVICEID_FLAG_DEVICE_CHANGED 1u  /* stored on another machine (clone, restored backup) */
#define DEVICEID_FLAG_WEAK           2u  /* not known to be unique to this device */
#define DEVICEID_FLAG_LIMITED        4u  /* advertising tracking limited: the ID reads as zeros */
#define DEVICEID_FLAG_FILE_ONLY      8u  /* the keyring answered but refused or failed to keep the ID */
#define DEVICEID_FLAG_REPAIRED      16u  /* a corrupt copy in one store was replaced from the other */
#define DEVICEID_FLAG_MIRRORED      32u  /* answered by the file mirror the keyring confirmed, no D-Bus */
#define DEVICEID_FLAG_PROVISIONAL   64u  /* kept without a keyring: one that answers later with another ID wins */
#define DEVICEID_FLAG_APP_DATA_ONLY 128u  /* kept only in a sandboxed app's own data: removed with it */
#define DEVICEID_FLAG_ANCHOR_CHANGED 256u  /* the Secret portal gave another secret: not the ID derived before */

/**
 * The identifier of `scope` (a DEVICEID_SCOPE_*) in `ctx`'s configuration, written to `out` as
 * deviceid_get() writes it. `name` is the app id for DEVICEID_SCOPE_APP and
 * DEVICEID_SCOPE_OPENUDID, the vendor id for DEVICEID_SCOPE_VENDOR, and ignored (NULL allowed)
 * for DEVICEID_SCOPE_ADVERTISING. All are kept like deviceid_get()'s: keyring plus mirror, minted
 * only when every store said "none".
 *
 * - DEVICEID_SCOPE_VENDOR: the same UUID for every app passing the same vendor id; unrelated
 *   across vendors and to the machine ID. A reset is "all the vendor's apps were removed".
 * - DEVICEID_SCOPE_ADVERTISING: one random UUID per user. While tracking is limited
 *   (deviceid_set_advertising_limited()) it reads as 00000000-0000-0000-0000-000000000000, as on
 *   iOS, with DEVICEID_FLAG_LIMITED, and the real one is kept for when the limit is lifted.
 * - DEVICEID_SCOPE_OPENUDID: one UUID shared by every app of the user, in any language; the first
 *   app to ask creates it. An app that opted out (deviceid_set_openudid_opt_out()) gets
 *   DEVICEID_E_OPTED_OUT and the all-zero UUID in `out`, so that code ignoring the status gets no
 *   real ID.
 *
 * `*source` (when not NULL) receives where the identifier came from (a DEVICEID_SOURCE_* value;
 * answers from memory report where they first came from) and `*flags` (when not NULL)
 * DEVICEID_FLAG_* bits:
 * - DEVICEID_FLAG_DEVICE_CHANGED: the machine fingerprint stored with the ID (an HMAC of the
 *   machine ID, never the raw value) does not match this machine — a cloned VM image or a restored
 *   backup. The ID is still returned; a reset then a new request re-mints it.
 * - DEVICEID_FLAG_WEAK: no machine ID could be read, or only a weak one, so the ID cannot be bound
 *   to this machine.
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
 *   gave the app its secret (see deviceid_get_environment()). Where the portal answers, the
 *   app's stable ID is derived from that secret instead (DEVICEID_SOURCE_PORTAL) and survives.
 *   deviceid_identifier_location() says where any answer lives.
 * - DEVICEID_FLAG_ANCHOR_CHANGED: in a Flatpak or Snap, the Secret portal answered with another
 *   secret for the app than the one the ID mirrored in the app's files was derived from (the
 *   host's keyring item was replaced or restored): the ID answered is derived from the new secret,
 *   and differs from the one answered before. Reported by the call that replaces the mirror (as
 *   DEVICEID_FLAG_DEVICE_CHANGED is for a store on another machine); the process's remembered
 *   answers are forgotten. See docs/STATE.md, "In a sandbox".
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (also an unknown scope), DEVICEID_E_BUFFER_TOO_SMALL,
 * DEVICEID_E_OPTED_OUT, DEVICEID_E_LOCKED, DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT,
 * DEVICEID_E_NO_COLLECTION, DEVICEID_E_CORRUPT, DEVICEID_E_IO, DEVICEID_E_PERMISSION,
 * DEVICEID_E_KEYRING, DEVICEID_E_COPIED (a this-device-only identifier sealed on another machine,
 * or before this machine's TPM was cleared: deviceid_identifier_reset() there makes way for a new
 * one), DEVICEID_E_NO_MEMORY.
 */
int deviceid_identifier(deviceid_context *DEVICEID_NULLABLE ctx, int scope, const char *DEVICEID_NULLABLE name,
                        char *DEVICEID_NULLABLE out, size_t out_size, int *DEVICEID_NULLABLE source,
                        unsigned int *DEVICEID_NULLABLE flags);

/**
 * Forgets the identifier of `scope` (as deviceid_reset() does for an app's); the next request
 * mints a new one. `name` as for deviceid_identifier(), and ignored for DEVICEID_SCOPE_OPENUDID
 * too (the shared ID is reset for every app). A reset of the advertising ID mints a new one,
 * hidden too while tracking is limited.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (also an unknown scope), DEVICEID_E_LOCKED,
 * DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT, DEVICEID_E_NO_COLLECTION, DEVICEID_E_CORRUPT,
 * DEVICEID_E_IO, DEVICEID_E_PERMISSION, DEVICEID_E_KEYRING, DEVICEID_E_UNSUPPORTED,
 * DEVICEID_E_NO_MEMORY.
 */
int deviceid_identifier_reset(deviceid_context *DEVICEID_NULLABLE ctx, int scope, const char *DEVICEID_NULLABLE name);

/**
 * Where the identifier of `scope` and `name` (as deviceid_identifier(), which it asks) lives.
 *
 * Returns a DEVICEID_LOCATION_* value (1 or more), or what deviceid_identifier() returns:
 * DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_OPTED_OUT, DEVICEID_E_LOCKED, DEVICEID_E_UNAVAILABLE,
 * DEVICEID_E_TIMED_OUT, DEVICEID_E_NO_COLLECTION, DEVICEID_E_CORRUPT, DEVICEID_E_IO,
 * DEVICEID_E_PERMISSION, DEVICEID_E_KEYRING, DEVICEID_E_COPIED, DEVICEID_E_NO_MEMORY.
 */
int deviceid_identifier_location(deviceid_context *DEVICEID_NULLABLE ctx, int scope, const char *DEVICEID_NULLABLE name);

/* ---- Settings: limit ad tracking, OpenUDID opt-out -------------------------------------------- */

/**
 * Turns "limit ad tracking" on (1) or off (0); persistent, kept like the IDs in the stores of
 * `ctx`'s configuration. The change reaches every store that may hold settings or fails
 * (DEVICEID_E_UNAVAILABLE, DEVICEID_E_LOCKED…) changing nothing; the latest change wins wherever
 * it is read.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (limited not 0 or 1), DEVICEID_E_LOCKED,
 * DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT, DEVICEID_E_NO_COLLECTION, DEVICEID_E_CORRUPT,
 * DEVICEID_E_IO, DEVICEID_E_PERMISSION, DEVICEID_E_KEYRING, DEVICEID_E_NO_MEMORY.
 */
int deviceid_set_advertising_limited(deviceid_context *DEVICEID_NULLABLE ctx, int limited);

/**
 * Whether advertising tracking is limited.
 *
 * Returns 1 (limited) or 0 (not), or DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_LOCKED,
 * DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT, DEVICEID_E_NO_COLLECTION, DEVICEID_E_CORRUPT,
 * DEVICEID_E_IO, DEVICEID_E_PERMISSION, DEVICEID_E_KEYRING, DEVICEID_E_NO_MEMORY.
 */
int deviceid_get_advertising_limited(deviceid_context *DEVICEID_NULLABLE ctx);

/**
 * Opts `app_id` out of OpenUDID (1) or back in (0); persistent, and durable as
 * deviceid_set_advertising_limited() is.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (also opt_out not 0 or 1), DEVICEID_E_LOCKED,
 * DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT, DEVICEID_E_NO_COLLECTION, DEVICEID_E_CORRUPT,
 * DEVICEID_E_IO, DEVICEID_E_PERMISSION, DEVICEID_E_KEYRING, DEVICEID_E_NO_MEMORY.
 */
int deviceid_set_openudid_opt_out(deviceid_context *DEVICEID_NULLABLE ctx, const char *DEVICEID_NULLABLE app_id,
                                  int opt_out);

/**
 * Whether `app_id` opted out of OpenUDID.
 *
 * Returns 1 (opted out) or 0 (not), or DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_LOCKED,
 * DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT, DEVICEID_E_NO_COLLECTION, DEVICEID_E_CORRUPT,
 * DEVICEID_E_IO, DEVICEID_E_PERMISSION, DEVICEID_E_KEYRING, DEVICEID_E_NO_MEMORY.
 */
int deviceid_get_openudid_opt_out(deviceid_context *DEVICEID_NULLABLE ctx, const char *DEVICEID_NULLABLE app_id);

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
#define DEVICEID_LOCATION_UNDETERMINED 8 /* in a container whose mount table could not be read whole */

#define DEVICEID_SURVIVES_APP_DATA_REMOVAL  1u  /* flatpak uninstall --delete-data, snap remove */
#define DEVICEID_SURVIVES_CONTAINER_REMOVAL 2u  /* docker rm */

#define DEVICEID_BINDING_NONE     0  /* portable: nothing is sealed; records travel with the home */
#define DEVICEID_BINDING_TPM      1  /* this-device-only, sealed to this machine's TPM */
#define DEVICEID_BINDING_REFUSED  2  /* this-device-only, and no usable TPM: writes are refused */
#define DEVICEID_BINDING_TPM_PCR7 3  /* this-device-only+pcr7, sealed to this TPM and PCR 7 as it is now */

#define DEVICEID_PORTAL_NOT_ASKED 0  /* not in a sandbox, or the secret-service backend */
#define DEVICEID_PORTAL_SECRET    1  /* the Secret portal gave the app its secret */
#define DEVICEID_PORTAL_ABSENT    2  /* positively none: no portal, or no Secret back end */
#define DEVICEID_PORTAL_FAILED    3  /* it could not answer: nothing is minted over it */

/**
 * One snapshot of where the process runs and where IDs live there, filled by
 * deviceid_get_environment(). Extensible as openat2(2)'s struct open_how is: a later version only
 * appends fields, the caller passes sizeof the struct it was compiled with, and fields the
 * library does not know are set to zero.
 */
typedef struct deviceid_environment {
    /** Where this process runs: a DEVICEID_ENVIRONMENT_* value (a sandbox wins over a container). */
    int kind;
    /**
     * What the Secret portal said, asked in a sandbox unless the backend is secret-service: a
     * DEVICEID_PORTAL_* value; portal_detail says why.
     */
    int portal;
    /**
     * Where the file store's files live: a DEVICEID_LOCATION_* value (host, app data, container,
     * volume or bind mount, from /proc/self/mountinfo; undetermined in a container whose table
     * could not be read whole, which promises nothing), or a negative status when no store
     * directory can be named (DEVICEID_E_PERMISSION: no home). `docker run -v
     * ids:/var/lib/deviceid` makes it a volume, which outlives the container (docs/ENVIRONMENTS.md
     * "Containers").
     */
    int store_location;
    /**
     * Where an app's stable ID is kept here when no store holds one yet (a DEVICEID_LOCATION_*:
     * the portal, the keyring, or the file store's location), asking the portal and the keyring;
     * or a negative status, as store_location.
     */
    int stable_id_location;
    /** The DEVICEID_SURVIVES_* events an ID at stable_id_location outlives. */
    unsigned int stable_id_survives;
    /**
     * 1 when the machine ID is weak — not known to be this machine's own: in a container, one the
     * manager did not make for the container (Docker's, baked into the image, is shared by every
     * container made from it), so app-specific machine IDs are the same in all of them and clone
     * detection cannot tell them apart (stable IDs then carry DEVICEID_FLAG_WEAK) — else 0.
     */
    int machine_id_weak;
    /**
     * The Flatpak app id, the snap's name or the container manager in systemd-detect-virt's words
     * ("docker", "podman", "systemd-nspawn", ...); "" on a host.
     */
    char name[DEVICEID_NAME_MAX];
    /** The file store's directory; "" when none can be named. */
    char store_path[DEVICEID_PATH_MAX];
    /** Why the machine ID is or is not weak, in words. */
    char machine_id_reason[DEVICEID_REASON_MAX];
    /** Why the portal answered as it did, in words; "" when it was not asked. */
    char portal_detail[DEVICEID_REASON_MAX];
    /**
     * The protection class in force: a DEVICEID_PROTECTION_* value (deviceid_set_protection()).
     * This field and the two below came after 1.0's struct: a caller passing 1.0's size gets the
     * fields above only.
     */
    int protection;
    /**
     * The binding in force for what is written: a DEVICEID_BINDING_* value, found by asking the TPM
     * for its binding key when the class is this-device-only; binding_detail says which TPM, or why
     * none can seal here.
     */
    int binding;
    /** The binding in words. */
    char binding_detail[DEVICEID_REASON_MAX];
} deviceid_environment;

/**
 * Fills `*out` with one snapshot of the environment in `ctx`'s configuration: every field from
 * the same look at the sandbox, the container, the portal, the keyring and the mount table, so
 * the answer cannot contradict itself. Asks, never writes; asking the portal and the keyring can
 * take up to the deadline (deviceid_set_timeout_ms()) each where they are slow. Each text is
 * NUL-terminated and, where longer than its field, cut at a character boundary (never
 * DEVICEID_E_BUFFER_TOO_SMALL).
 *
 *     deviceid_environment env;
 *     if (deviceid_get_environment(NULL, &env, sizeof env) == 0)
 *         printf("%s: %s\n", deviceid_environment_kind_name(env.kind), deviceid_location_name(env.stable_id_location));
 *
 * size: sizeof *out; at least the size of 1.0's struct (up to portal_detail) and at most 65536 (as openat2(2) bounds
 * its struct by a page). A larger struct than this library knows gets its unknown tail zeroed.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (out is NULL, size out of those bounds, an invalid
 * configuration, or ctx not a context).
 */
int deviceid_get_environment(deviceid_context *DEVICEID_NULLABLE ctx, deviceid_environment *DEVICEID_NULLABLE out,
                             size_t size);

/** The name of a DEVICEID_ENVIRONMENT_* value ("host", "flatpak", "snap", "container"); "unknown" otherwise. */
const char *DEVICEID_NONNULL deviceid_environment_kind_name(int kind);
/** The name of a DEVICEID_PORTAL_* value ("not-asked", "secret", "absent", "failed"); "unknown" otherwise. */
const char *DEVICEID_NONNULL deviceid_portal_state_name(int state);
/** The name of a DEVICEID_LOCATION_* value ("keyring", "portal", "app-data", "host", "container", "volume", "bind-mount", "undetermined"); "unknown" otherwise. */
const char *DEVICEID_NONNULL deviceid_location_name(int location);
/** The DEVICEID_SURVIVES_* events an ID at `location` outlives; 0 for an unknown location. */
unsigned int deviceid_location_survives(int location);

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
 * written before (by 0.3, or by the file backend) is still read where the keyring has no copy, and
 * is never deleted by a store to the keyring: a program on the file backend may rely on it
 * (`deviceid --backend file secret delete` removes it).
 */

/**
 * Stores `size` bytes at `data` (binary-safe; size 0 allowed, then data may be NULL), replacing
 * the item with the same service and account.
 *
 * With DEVICEID_PROTECTION_THIS_DEVICE_ONLY the secret is sealed to this machine's TPM (at most
 * DEVICEID_SECRET_MAX - 140 bytes then; - 172 with _PCR7), and a TPM that cannot seal fails the
 * call with its status.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_TOO_LARGE (size > DEVICEID_SECRET_MAX),
 * DEVICEID_E_NO_KEYRING (auto mode, no keyring to take it: nothing written), DEVICEID_E_LOCKED,
 * DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT, DEVICEID_E_NO_COLLECTION, DEVICEID_E_KEYRING,
 * DEVICEID_E_IO, DEVICEID_E_PERMISSION, DEVICEID_E_NO_MEMORY.
 */
int deviceid_secret_store(deviceid_context *DEVICEID_NULLABLE ctx, const char *DEVICEID_NULLABLE service,
                          const char *DEVICEID_NULLABLE account, const void *DEVICEID_NULLABLE data, size_t size);

/**
 * Looks up a secret. On success `*data` receives a library-allocated copy (free it with
 * deviceid_free(); it is NUL-terminated one byte past `*size` for convenience, and non-NULL even
 * for an empty secret) and `*size` its length. On failure both are set to NULL and 0.
 *
 * Returns 0, or DEVICEID_E_NOT_FOUND, DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_LOCKED,
 * DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT, DEVICEID_E_NO_COLLECTION, DEVICEID_E_CORRUPT,
 * DEVICEID_E_TOO_LARGE (a stored secret over DEVICEID_SECRET_MAX), DEVICEID_E_KEYRING,
 * DEVICEID_E_COPIED (a this-device-only secret sealed on another machine, or before this
 * machine's TPM was cleared), DEVICEID_E_IO, DEVICEID_E_PERMISSION, DEVICEID_E_NO_MEMORY.
 */
int deviceid_secret_lookup(deviceid_context *DEVICEID_NULLABLE ctx, const char *DEVICEID_NULLABLE service,
                           const char *DEVICEID_NULLABLE account, void *DEVICEID_NULLABLE *DEVICEID_NULLABLE data,
                           size_t *DEVICEID_NULLABLE size);

/**
 * Deletes the secret from every store of the backend.
 *
 * Returns 0, or DEVICEID_E_NOT_FOUND when no store had it, DEVICEID_E_INVALID_ARGUMENT,
 * DEVICEID_E_LOCKED (nothing deleted), DEVICEID_E_UNAVAILABLE, DEVICEID_E_TIMED_OUT,
 * DEVICEID_E_NO_COLLECTION, DEVICEID_E_KEYRING, DEVICEID_E_IO, DEVICEID_E_PERMISSION,
 * DEVICEID_E_NO_MEMORY.
 */
int deviceid_secret_delete(deviceid_context *DEVICEID_NULLABLE ctx, const char *DEVICEID_NULLABLE service,
                           const char *DEVICEID_NULLABLE account);

/* ---- The hardware-bound ID and attestation (TPM 2.0) ------------------------------------------ */

/*
 * An ID no store keeps: the TPM derives a key from its own seed and the app id, and the ID is a
 * hash of that key's Name (docs/HARDWARE-ID.md). The same on every call on one TPM, after every
 * store, the home directory or the OS is wiped; another, unlinkable one per app id; a new one only
 * when the TPM is cleared or replaced. It reveals nothing of the endorsement key.
 *
 * The TPM is the kernel's resource manager, /dev/tpmrm0, unless DEVICEID_TPM_TCTI names another
 * ("device:/dev/tpmrmN", or "swtpm:path=SOCKET" for a software TPM); /dev/tpm0 is never used.
 * tpm2-tss's ESAPI (libtss2-esys.so.0) is loaded on first use. Each call is bounded by the
 * deadline of deviceid_set_timeout_ms() of `ctx`, from the first byte (at least 60 s for
 * deviceid_attest_enrolment() and deviceid_attest_activate(), which may create an endorsement key
 * or a platform AK). When a TPM command or
 * connection fails, tpm2-tss itself may write a warning line to stderr; DeviceID does not change
 * the environment to prevent it (TSS2_LOG=all+none does).
 *
 * A status has one deviceid_strerror() text, worded for the stores ("store unavailable"); after a
 * TPM call, it means what that call's list says (DEVICEID_E_UNAVAILABLE: no TPM), and the
 * command, Swift and Python word it for the TPM ("TPM unavailable: ...", the status table's TPM
 * column). deviceid_last_error() says what happened in either case.
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
int deviceid_hardware_id(deviceid_context *DEVICEID_NULLABLE ctx, const char *DEVICEID_NULLABLE app_id,
                         char *DEVICEID_NULLABLE out, size_t out_size);

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
 * {"v": 1, "type": "deviceid.enrolment-request", "app_id": …, "ek_kind": …, "ek_certificate": …,
 * "ak_public": …}: the app id, the certificate (DER) of the first EK the TPM holds in the order
 * L-1, L-2, H-1, H-2, H-3, H-4, H-6, H-7 (TCG EK Credential Profile templates), each other one as
 * "ek_certificate_<kind>", the certificates of the EK chain indices as "ek_chain", and the
 * app's attestation key's public area. The CA chooses one. A TPM with no EK certificate in NV (a
 * firmware TPM whose certificate is published online) sends "ek_public", its L-1 EK's
 * TPMT_PUBLIC, in place of "ek_certificate", for a CA given the certificate out of band.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT, DEVICEID_E_UNSUPPORTED (the only EK certificates
 * are of EKs the TPM makes from a template in NV), DEVICEID_E_UNAVAILABLE, DEVICEID_E_PERMISSION,
 * DEVICEID_E_LOCKED, DEVICEID_E_TIMED_OUT, DEVICEID_E_UNSUPPORTED, DEVICEID_E_TOO_LARGE,
 * DEVICEID_E_IO, DEVICEID_E_NO_MEMORY.
 */
int deviceid_attest_enrolment(deviceid_context *DEVICEID_NULLABLE ctx, const char *DEVICEID_NULLABLE app_id,
                              char *DEVICEID_NULLABLE *DEVICEID_NULLABLE out);

/**
 * Answers the CA's enrolment challenge for `app_id`'s attestation key.
 *
 * The challenge is {"v": 1, "type": "deviceid.enrolment-challenge", ..., "ek_kind": …}; the
 * answer, {"v": 1, "type": "deviceid.enrolment-response", "id": …, "credential": …}, holds what
 * TPM2_ActivateCredential with the EK of that kind (L-1 where absent) recovered, and for each
 * "credential_blob_<kind>" the CA sealed to another EK the request offered, "credential_<kind>":
 * that EK's answer, which proves to the CA that both EKs are this TPM's.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (not a challenge, or one this TPM cannot open:
 * made for another TPM or another attestation key), DEVICEID_E_UNSUPPORTED (another wire format
 * version, an EK kind DeviceID does not know, or TCTI), DEVICEID_E_UNAVAILABLE, DEVICEID_E_PERMISSION, DEVICEID_E_LOCKED,
 * DEVICEID_E_TIMED_OUT, DEVICEID_E_IO, DEVICEID_E_NO_MEMORY.
 */
int deviceid_attest_activate(deviceid_context *DEVICEID_NULLABLE ctx, const char *DEVICEID_NULLABLE app_id,
                             const char *DEVICEID_NULLABLE challenge, char *DEVICEID_NULLABLE *DEVICEID_NULLABLE out);

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
int deviceid_attest(deviceid_context *DEVICEID_NULLABLE ctx, const char *DEVICEID_NULLABLE app_id,
                    const void *DEVICEID_NULLABLE nonce, size_t nonce_size, const char *DEVICEID_NULLABLE ak_certificate,
                    char *DEVICEID_NULLABLE *DEVICEID_NULLABLE out);

/*
 * App Attest for Linux, in WebAuthn's formats (docs/HARDWARE-ID.md): each app id has a credential
 * key the TPM derives, which the app's AK certifies once (deviceid_attest_webauthn(): a
 * registration any WebAuthn verifier accepts, for relying party id = the app id) and which then
 * signs each request (deviceid_assert(), whose signCount is the app's counter in the TPM). Both
 * sign over `client_data_hash`, the 32-byte SHA-256 of the WebAuthn client data the app built
 * around its server's challenge. Binary fields are base64url without padding, as WebAuthn writes
 * them; the message is returned in `*out` as above.
 */

/**
 * Makes the WebAuthn registration of `app_id`'s credential key for the app's server.
 *
 * {"v": 1, "type": "deviceid.webauthn-attestation", "app_id": …, "credential_id": …,
 * "attestation_object": …}: an attestation object of format "tpm" (TPM2_Certify of the credential
 * key by the app's AK over SHA-256(authData ‖ client_data_hash)), whose x5c is the certificate of
 * `ak_certificate`, the CA's {"type": "deviceid.ak-certificate"} message (required).
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (a hash of another size than 32, a bad app id or
 * certificate message), DEVICEID_E_UNSUPPORTED, DEVICEID_E_UNAVAILABLE, DEVICEID_E_PERMISSION,
 * DEVICEID_E_LOCKED, DEVICEID_E_TIMED_OUT, DEVICEID_E_IO, DEVICEID_E_NO_MEMORY.
 */
int deviceid_attest_webauthn(deviceid_context *DEVICEID_NULLABLE ctx, const char *DEVICEID_NULLABLE app_id,
                             const void *DEVICEID_NULLABLE client_data_hash, size_t client_data_hash_size,
                             const char *DEVICEID_NULLABLE ak_certificate, char *DEVICEID_NULLABLE *DEVICEID_NULLABLE out);

/**
 * Makes a WebAuthn assertion by `app_id`'s credential key for one request of the app's server.
 *
 * Increments the app's counter in the TPM (an NV counter index, defined at the first call), then
 * signs SHA-256(authenticatorData ‖ client_data_hash): {"v": 1, "type":
 * "deviceid.webauthn-assertion", "app_id": …, "credential_id": …, "authenticator_data": …,
 * "signature": …, "counter": N}. The server checks the signature with the key it registered and
 * that N grew: an equal or lower one is a replay or a cloned TPM.
 *
 * Returns 0, or DEVICEID_E_INVALID_ARGUMENT (a hash of another size than 32, a bad app id),
 * DEVICEID_E_NO_MEMORY (no room in the TPM's NV memory for the counter, or memory),
 * DEVICEID_E_UNSUPPORTED (a counter past 2^32 - 1, which signCount cannot carry),
 * DEVICEID_E_UNAVAILABLE, DEVICEID_E_PERMISSION, DEVICEID_E_LOCKED, DEVICEID_E_TIMED_OUT,
 * DEVICEID_E_IO.
 */
int deviceid_assert(deviceid_context *DEVICEID_NULLABLE ctx, const char *DEVICEID_NULLABLE app_id,
                    const void *DEVICEID_NULLABLE client_data_hash, size_t client_data_hash_size,
                    char *DEVICEID_NULLABLE *DEVICEID_NULLABLE out);

#ifdef __cplusplus
}
#endif

#endif /* DEVICEID_H */
