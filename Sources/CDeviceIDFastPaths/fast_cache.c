#include "CDeviceIDFastPaths.h"

#include <string.h>

#include "deviceid.h"

#define SLOTS 8
/* The sizes are the public header's: a name without its NUL, a UUID with it. */
#define NAME_MAX_BYTES (DEVICEID_NAME_MAX - 1)
#define ANSWER_BYTES DEVICEID_UUID_STRING_MAX

struct slot {
    uint64_t generation;  /* 0: empty (generations start at 1) */
    int kind;
    int source;
    unsigned int flags;
    size_t length;
    char name[NAME_MAX_BYTES];
    char answer[ANSWER_BYTES];
};

static _Thread_local struct slot slots[SLOTS];
static _Thread_local unsigned int next_slot;

int dids_cache_lookup(int kind, const char *name, uint64_t generation, char *out, size_t out_size, int *source,
                      unsigned int *flags) {
    if (name == NULL || out == NULL || out_size < ANSWER_BYTES) return 0;
    size_t length = strnlen(name, NAME_MAX_BYTES + 1);
    if (length > NAME_MAX_BYTES) return 0;
    for (unsigned int i = 0; i < SLOTS; i++) {
        struct slot *s = &slots[i];
        if (s->generation == generation && generation != 0 && s->kind == kind && s->length == length && memcmp(s->name, name, length) == 0) {
            memcpy(out, s->answer, ANSWER_BYTES);
            if (source) *source = s->source;
            if (flags) *flags = s->flags;
            return 1;
        }
    }
    return 0;
}

void dids_cache_store(int kind, const char *name, uint64_t generation, const char *answer, int source,
                      unsigned int flags) {
    size_t length = strnlen(name, NAME_MAX_BYTES + 1);
    if (length > NAME_MAX_BYTES || strnlen(answer, ANSWER_BYTES) >= ANSWER_BYTES) return;
    struct slot *s = &slots[next_slot++ % SLOTS];
    s->generation = generation;
    s->kind = kind;
    s->source = source;
    s->flags = flags;
    s->length = length;
    memcpy(s->name, name, length);
    memset(s->answer, 0, ANSWER_BYTES);
    memcpy(s->answer, answer, strlen(answer));
}
