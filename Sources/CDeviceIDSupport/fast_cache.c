#include "CDeviceIDFastPaths.h"

#include <stdatomic.h>
#include <string.h>

#define SLOTS 8
#define NAME_MAX_BYTES 255
#define ANSWER_BYTES 37

struct slot {
    uint64_t epoch;  /* 0: empty */
    int kind;
    int source;
    unsigned int flags;
    size_t length;
    char name[NAME_MAX_BYTES];
    char answer[ANSWER_BYTES];
};

static _Atomic uint64_t epoch = 1;
static _Thread_local struct slot slots[SLOTS];
static _Thread_local unsigned int next_slot;

uint64_t dids_cache_epoch(void) { return atomic_load_explicit(&epoch, memory_order_acquire); }

void dids_cache_invalidate(void) { atomic_fetch_add_explicit(&epoch, 1, memory_order_acq_rel); }

int dids_cache_lookup(int kind, const char *name, char *out, size_t out_size, int *source, unsigned int *flags) {
    if (name == NULL || out == NULL || out_size < ANSWER_BYTES) return 0;
    size_t length = strnlen(name, NAME_MAX_BYTES + 1);
    if (length > NAME_MAX_BYTES) return 0;
    uint64_t now = dids_cache_epoch();
    for (unsigned int i = 0; i < SLOTS; i++) {
        struct slot *s = &slots[i];
        if (s->epoch == now && s->kind == kind && s->length == length && memcmp(s->name, name, length) == 0) {
            memcpy(out, s->answer, ANSWER_BYTES);
            if (source) *source = s->source;
            if (flags) *flags = s->flags;
            return 1;
        }
    }
    return 0;
}

void dids_cache_store(int kind, const char *name, uint64_t at, const char *answer, int source, unsigned int flags) {
    size_t length = strnlen(name, NAME_MAX_BYTES + 1);
    if (length > NAME_MAX_BYTES || strnlen(answer, ANSWER_BYTES) >= ANSWER_BYTES) return;
    struct slot *s = &slots[next_slot++ % SLOTS];
    s->epoch = at;
    s->kind = kind;
    s->source = source;
    s->flags = flags;
    s->length = length;
    memcpy(s->name, name, length);
    memset(s->answer, 0, ANSWER_BYTES);
    memcpy(s->answer, answer, strlen(answer));
}
