#ifndef CDEVICEID_FAST_PATHS_H
#define CDEVICEID_FAST_PATHS_H
// Per-thread fast paths of the C ABI, in C because they must cost nanoseconds: a cache of recent
// answers (no lock: thread-local slots, each kept with the generation it was computed at — see
// DeviceIdentity.generation — and ignored once that has moved on), and a pool of kernel
// randomness for UUIDs (refilled with getrandom, discarded in forked children). What is cached
// and under which kind is decided in one place, Sources/DeviceIDC/AnswerCache.swift.
#include <stddef.h>
#include <stdint.h>

/// Copies a cached answer for (kind, name), computed at `generation`, into out (at least 37
/// bytes): 1 on a hit, else 0.
int dids_cache_lookup(int kind, const char *name, uint64_t generation, char *out, size_t out_size, int *source,
                      unsigned int *flags);
/// Remembers an answer (a NUL-terminated string of at most 36 characters) computed at `generation`.
void dids_cache_store(int kind, const char *name, uint64_t generation, const char *answer, int source,
                      unsigned int flags);

/// A random version-4 UUID's 16 bytes, from this thread's pool: 0, or -errno when the kernel gives
/// no randomness. The pool is never shared with a forked child.
int dids_uuid4_bytes(unsigned char out[16]);

/// A random version-4 UUID as text (37 bytes with the NUL): lowercase or uppercase, dashed or
/// compact. 0, or -errno when the kernel gives no randomness.
int dids_uuid4_text(char *out, int uppercase, int compact);

#endif
