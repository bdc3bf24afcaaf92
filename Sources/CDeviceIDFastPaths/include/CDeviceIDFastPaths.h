#ifndef CDEVICEID_FAST_PATHS_H
#define CDEVICEID_FAST_PATHS_H
// The C ABI's per-thread state, in C because Swift cannot declare thread-local storage: a cache
// of recent answers, which must cost nanoseconds (no lock: thread-local slots, each kept with the
// generation it was computed at — see DeviceIdentity.generation — and ignored once that has moved
// on), and the text of the thread's last failure. What is cached and under which kind is decided
// in one place, Sources/DeviceIDC/AnswerCache.swift. And the C ABI's fixed-size text fields, which
// C fills by their sizeof: Embedded Swift cannot specialize its generic byte access for a
// 4096-element tuple.
#include <stddef.h>
#include <stdint.h>

/// Copies `text` into `out` (`size` bytes, at least 1) with its NUL, cut at a character boundary
/// (the text stays valid UTF-8).
void dids_copy_text(char *out, size_t size, const char *text);

/// The detail text of the calling thread's last failure, copied by dids_copy_text into
/// DEVICEID_REASON_MAX bytes.
void dids_set_last_error(const char *text);
const char *dids_last_error(void);

/// Copies a cached answer for (kind, name), computed at `generation`, into out (at least 37
/// bytes): 1 on a hit, else 0.
int dids_cache_lookup(int kind, const char *name, uint64_t generation, char *out, size_t out_size, int *source,
                      unsigned int *flags);
/// Remembers an answer (a NUL-terminated string of at most 36 characters) computed at `generation`.
void dids_cache_store(int kind, const char *name, uint64_t generation, const char *answer, int source,
                      unsigned int flags);

/// The numbers deviceid_get_environment() reports (include/deviceid.h, struct deviceid_environment).
struct dids_environment_facts {
    int kind, portal, store_location, stable_id_location;
    unsigned int stable_id_survives;
    int machine_id_weak;
    int protection, binding;
};
/// Fills the first `size` bytes (at least dids_environment_size_1_0(), at most this library's size)
/// of the deviceid_environment at `out`: the numbers from `facts`, each text cut to its field.
void dids_environment_pack(void *out, size_t size, const struct dids_environment_facts *facts, const char *name,
                           const char *store_path, const char *machine_id_reason, const char *portal_detail,
                           const char *binding_detail);
/// sizeof(deviceid_environment) as this library knows it.
size_t dids_environment_size(void);
/// The size of 1.0's deviceid_environment (up to portal_detail): the least a caller may pass.
size_t dids_environment_size_1_0(void);

#endif
