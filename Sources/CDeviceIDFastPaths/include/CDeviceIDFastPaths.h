#ifndef CDEVICEID_FAST_PATHS_H
#define CDEVICEID_FAST_PATHS_H
// The C ABI's per-thread state, in C because Swift cannot declare thread-local storage: a cache
// of recent answers, which must cost nanoseconds (no lock: thread-local slots, each kept with the
// generation it was computed at — see DeviceIdentity.generation — and ignored once that has moved
// on), and the text of the thread's last failure. What is cached and under which kind is decided
// in one place, Sources/DeviceIDC/AnswerCache.swift.
#include <stddef.h>
#include <stdint.h>

/// The detail text of the calling thread's last failure. `dids_set_last_error` copies and
/// truncates at 511 bytes, at a character boundary (the text stays valid UTF-8).
void dids_set_last_error(const char *text);
const char *dids_last_error(void);

/// Copies a cached answer for (kind, name), computed at `generation`, into out (at least 37
/// bytes): 1 on a hit, else 0.
int dids_cache_lookup(int kind, const char *name, uint64_t generation, char *out, size_t out_size, int *source,
                      unsigned int *flags);
/// Remembers an answer (a NUL-terminated string of at most 36 characters) computed at `generation`.
void dids_cache_store(int kind, const char *name, uint64_t generation, const char *answer, int source,
                      unsigned int flags);

#endif
