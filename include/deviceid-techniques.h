/*
 * deviceid-techniques.h — the identifiers of the iOS era, as stateless functions: random and
 * parsed UUIDs, the MAC address and its MD5 (iOS 6's "MAC + bundle id" hash), digests of tokens,
 * and the machine identity (systemd's machine ID and its app-specific form, the DMI product UUID).
 * None of them keeps state, reads a configuration or takes a context; the conventions, statuses
 * and deviceid_last_error() are those of <deviceid.h>, which this header includes.
 *
 * The split follows libsecret's: <libsecret/secret.h> holds the object API, secret-password.h the
 * simple one; here <deviceid.h> holds what is kept, this header what is computed.
 */
#ifndef DEVICEID_TECHNIQUES_H
#define DEVICEID_TECHNIQUES_H

#include "deviceid.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Bytes for "AA:BB:CC:DD:EE:FF" and its NUL (the compact form needs 13). */
#define DEVICEID_MAC_STRING_MAX 18U
/** Bytes for a network interface name and its NUL (IFNAMSIZ). */
#define DEVICEID_INTERFACE_NAME_MAX 16U
/** Bytes for a lowercase hex MD5 digest and its NUL. */
#define DEVICEID_MD5_HEX_MAX 33U
/** Bytes for a lowercase hex SHA-256 digest and its NUL. */
#define DEVICEID_SHA256_HEX_MAX 65U

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
 * DEVICEID_E_TOO_LARGE (size over 2^31 - 1), DEVICEID_E_UNSUPPORTED (MD5 in FIPS mode),
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

#ifdef __cplusplus
}
#endif

#endif /* DEVICEID_TECHNIQUES_H */
