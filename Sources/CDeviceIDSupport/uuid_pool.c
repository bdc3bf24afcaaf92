#include "CDeviceIDFastPaths.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/random.h>

#define POOL 256

/* A forked child must not hand out the UUIDs its parent's pool still holds. */
static _Atomic unsigned int fork_generation;
static pthread_once_t registered = PTHREAD_ONCE_INIT;
static void after_fork_in_child(void) { atomic_fetch_add(&fork_generation, 1); }
static void register_fork_handler(void) { pthread_atfork(NULL, NULL, after_fork_in_child); }

static _Thread_local struct {
    unsigned char bytes[POOL];
    size_t used;
    unsigned int generation;
    int filled;
} pool;

static int take(unsigned char out[16]) {
    pthread_once(&registered, register_fork_handler);
    unsigned int generation = atomic_load(&fork_generation);
    if (!pool.filled || pool.generation != generation || pool.used + 16 > POOL) {
        size_t got = 0;
        while (got < POOL) {
            ssize_t n = getrandom(pool.bytes + got, POOL - got, 0);
            if (n < 0) {
                if (errno == EINTR) continue;
                return -errno;
            }
            got += (size_t)n;
        }
        pool.used = 0;
        pool.generation = generation;
        pool.filled = 1;
    }
    memcpy(out, pool.bytes + pool.used, 16);
    explicit_bzero(pool.bytes + pool.used, 16);  /* each byte is handed out once */
    pool.used += 16;
    return 0;
}

int dids_uuid4_text(char *out, int uppercase, int compact) {
    unsigned char b[16];
    int r = take(b);
    if (r < 0) return r;
    b[6] = (unsigned char)((b[6] & 0x0F) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3F) | 0x80);
    const char *digits = uppercase ? "0123456789ABCDEF" : "0123456789abcdef";
    char *p = out;
    for (int i = 0; i < 16; i++) {
        if (!compact && (i == 4 || i == 6 || i == 8 || i == 10)) *p++ = '-';
        *p++ = digits[b[i] >> 4];
        *p++ = digits[b[i] & 15];
    }
    *p = '\0';
    return 0;
}
