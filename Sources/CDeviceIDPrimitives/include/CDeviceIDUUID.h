#ifndef CDEVICEID_UUID_H
#define CDEVICEID_UUID_H
// The one owner of UUID text, hexadecimal digits, the version-4 bits and the getrandom loop, in C
// because the C ABI's fast paths need them without Swift (CDeviceIDFastPaths.h); the Swift side
// (Hex, ID128, SystemRandom) calls these too.
#include <stddef.h>

/// Fills `size` bytes from the kernel's CSPRNG (getrandom, retried on EINTR and short reads):
/// 0, or -errno.
int dids_random_fill(void *buffer, size_t size);

/// Sets the version nibble to 4 and the RFC 9562 variant bits, as sd_id128_make_v4_uuid does.
void dids_make_v4(unsigned char bytes[16]);

/// Writes 2 × size hex digits (lowercase, or uppercase) and a NUL to `out`.
void dids_hex_encode(const unsigned char *bytes, size_t size, int uppercase, char *out);

/// Writes a UUID's text and a NUL to `out` (37 bytes): 8-4-4-4-12 digits, or 32 when compact.
void dids_uuid_format(const unsigned char bytes[16], int uppercase, int compact, char *out);

/// A pool of kernel randomness for UUIDs, per thread (thread-local storage, which Swift cannot
/// declare), refilled with getrandom and never shared with a forked child (uuid_pool.c).
///
/// A random version-4 UUID's 16 bytes, from this thread's pool: 0, or -errno when the kernel gives
/// no randomness. The pool is never shared with a forked child.
int dids_uuid4_bytes(unsigned char out[16]);

/// A random version-4 UUID as text (37 bytes with the NUL): lowercase or uppercase, dashed or
/// compact. 0, or -errno when the kernel gives no randomness.
int dids_uuid4_text(char *out, int uppercase, int compact);

#endif
