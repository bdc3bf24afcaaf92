// What DeviceID's two TCTIs share (tcti.h).
#include "tcti.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>

uint64_t dids_tcti_now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t ms = (uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u;
#ifdef DIDS_FUZZ_TPM
    ms += dids_tcti_fuzz_ahead_ms();
#endif
    return ms;
}

int dids_tcti_wait(int fd, short events, uint64_t until_ms) {
    struct pollfd ready = {.fd = fd, .events = events};
    for (;;) {
        uint64_t now = dids_tcti_now_ms();
        if (now >= until_ms) return 0;
        uint64_t left = until_ms - now;
        int paused = dids_computing_pause();
        int n = poll(&ready, 1, left > INT32_MAX ? INT32_MAX : (int)left);
        int error = errno;
        dids_computing_resume(paused);
        errno = error;
        if (n > 0) return 1;
        if (n < 0 && errno != EINTR) return -1;
    }
}

void dids_tcti_sleep_until(uint64_t until_ms) {
#ifdef DIDS_FUZZ_TPM
    if (dids_tcti_fuzz_skip(until_ms)) return;
#endif
    for (uint64_t now = dids_tcti_now_ms(); now < until_ms; now = dids_tcti_now_ms()) {
        uint64_t left = until_ms - now;
        struct timespec a_while = {(time_t)(left / 1000), (long)(left % 1000) * 1000000L};
        int paused = dids_computing_pause();
        nanosleep(&a_while, NULL);
        dids_computing_resume(paused);
    }
}

uint32_t dids_tcti_be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

TSS2_RC dids_tcti_refused_command(const uint8_t *command, size_t size) {
    if (!command) return DIDS_TCTI_RC_BAD_REFERENCE;
    if (size < DIDS_TCTI_HEADER || size > DIDS_TCTI_LARGEST || dids_tcti_be32(command + 2) != size)
        return DIDS_TCTI_RC_BAD_VALUE;
    return 0;
}

int dids_tcti_deliver(const uint8_t *answer, size_t length, size_t *size, uint8_t *response, TSS2_RC *rc) {
    *rc = 0;
    if (!response) { *size = length; return 1; }  // asked for the size: kept for the next call
    if (*size < length) { *size = length; *rc = DIDS_TCTI_RC_INSUFFICIENT_BUFFER; return 1; }
    // ESAPI's parser reads to its buffer's end, not to the answer's: an answer cut short would be
    // completed with whatever the buffer held (the command just sent, the previous answer). The
    // rest is zeroed, so that a short answer parses as nothing any caller accepts.
    size_t capacity = *size;
    *size = length;
    memcpy(response, answer, length);
    memset(response + length, 0, capacity - length);
    return 0;
}

TSS2_RC dids_tcti_not_implemented(TSS2_TCTI_CONTEXT *context) {
    const struct dids_tcti_common *common = (const struct dids_tcti_common *)context;
    return common && common->magic ? DIDS_TCTI_RC_NOT_IMPLEMENTED : DIDS_TCTI_RC_BAD_CONTEXT;
}

TSS2_RC dids_tcti_no_poll_handles(TSS2_TCTI_CONTEXT *context, void *handles, size_t *count) {
    (void)handles, (void)count;
    return dids_tcti_not_implemented(context);
}
