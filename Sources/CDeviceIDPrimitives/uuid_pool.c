#include "CDeviceIDUUID.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#define POOL 256

/* A forked child must not hand out the UUIDs its parent's pool still holds. */
static _Atomic unsigned int fork_generation;
static void after_fork_in_child(void) { atomic_fetch_add(&fork_generation, 1); }
// Registered when the library is loaded: fork() runs only the handlers registered before it began
// (glibc counts them, then runs the prepare handlers with its lock released), so one registered by
// another thread's first call during a fork was skipped in that child (docs/ROBUSTNESS.md, "A TPM
// that changes, a process that forks").
__attribute__((constructor)) static void register_fork_handler(void) { pthread_atfork(NULL, NULL, after_fork_in_child); }

static _Thread_local struct {
    unsigned char bytes[POOL];
    size_t used;
    unsigned int generation;
    int filled;
} pool;

static int take(unsigned char out[16]) {
    unsigned int generation = atomic_load(&fork_generation);
    if (!pool.filled || pool.generation != generation || pool.used + 16 > POOL) {
        int r = dids_random_fill(pool.bytes, POOL);
        if (r < 0) return r;
        pool.used = 0;
        pool.generation = generation;
        pool.filled = 1;
    }
    memcpy(out, pool.bytes + pool.used, 16);
    explicit_bzero(pool.bytes + pool.used, 16);  /* each byte is handed out once */
    pool.used += 16;
    return 0;
}

int dids_uuid4_bytes(unsigned char out[16]) {
    int r = take(out);
    if (r == 0) dids_make_v4(out);
    return r;
}

int dids_uuid4_text(char *out, int uppercase, int compact) {
    unsigned char b[16];
    int r = dids_uuid4_bytes(b);
    if (r < 0) return r;
    dids_uuid_format(b, uppercase, compact, out);
    explicit_bzero(b, sizeof b);
    return 0;
}
