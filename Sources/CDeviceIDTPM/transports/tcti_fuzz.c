// The TPM as libFuzzer's bytes (scripts/fuzz tpm): compiled only into the fuzz build
// (-DDIDS_FUZZ_TPM, scripts/fuzz), and there in use only where the harness that hands the bytes out
// is linked in (Tests/fuzz/tpm/fuzz_tpm.c, dids_fuzz_tpm_read): the C API fuzzer and the Python run
// over the same ASan library speak to a real swtpm. Then every conversation a `swtpm:` address
// opens reads its answers, one after another, from those bytes: a header, cut at the size it
// states as swtpm's TCTI reads an answer, with the same refusals (a size below the header's or
// above the largest answer: MALFORMED_RESPONSE; the bytes ending first: IO_ERROR, as a closed
// connection). So a recorded swtpm conversation is an input as it is, and the fuzzer's mutations
// are answers that came over the wire.
// The clock is then CLOCK_MONOTONIC plus the time slept: a sleep (a RETRY's pause) passes at once,
// so that a TPM that answers RETRY until the deadline costs the fuzzer nothing, and the deadline
// is still met where the real clock would meet it. It restarts with each conversation, whose
// deadline the caller took from the real clock just before.
#ifdef DIDS_FUZZ_TPM
#include "tcti.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC 0x46757a7a54504d21ull  // "FuzzTPM!"

/// The harness's: up to `size` of the next bytes the TPM sends into `buffer`; how many (fewer at
/// the input's end).
extern size_t dids_fuzz_tpm_read(uint8_t *buffer, size_t size) __attribute__((weak));

static uint64_t slept_ms;

int dids_tcti_fuzz_fed(void) { return dids_fuzz_tpm_read != NULL; }

uint64_t dids_tcti_fuzz_ahead_ms(void) { return slept_ms; }

int dids_tcti_fuzz_skip(uint64_t until_ms) {
    if (!dids_tcti_fuzz_fed()) return 0;
    uint64_t now = dids_tcti_now_ms();
    if (until_ms > now) slept_ms += until_ms - now;
    return 1;
}

int dids_tcti_fuzz_unsalted(void) { return getenv("DEVICEID_FUZZ_TPM_UNSALTED") != NULL; }

struct fuzz_tcti {
    DIDS_TCTI_COMMON_V1
    int pending;      // a command was sent whose answer has not been collected
    size_t received;  // that answer, read and kept for the next receive, or 0
    uint8_t answer[DIDS_TCTI_LARGEST];
};

static struct fuzz_tcti *cast(TSS2_TCTI_CONTEXT *context) {
    struct fuzz_tcti *tcti = (struct fuzz_tcti *)context;
    return tcti && tcti->magic == MAGIC ? tcti : NULL;
}

static TSS2_RC transmit(TSS2_TCTI_CONTEXT *context, size_t size, const uint8_t *command) {
    struct fuzz_tcti *tcti = cast(context);
    if (!tcti) return DIDS_TCTI_RC_BAD_CONTEXT;
    TSS2_RC refused = dids_tcti_refused_command(command, size);
    if (refused) return refused;
    if (tcti->pending) return DIDS_TCTI_RC_BAD_SEQUENCE;
    tcti->pending = 1;
    tcti->received = 0;
    return 0;
}

static TSS2_RC receive(TSS2_TCTI_CONTEXT *context, size_t *size, uint8_t *response, int32_t timeout) {
    (void)timeout;
    struct fuzz_tcti *tcti = cast(context);
    if (!tcti) return DIDS_TCTI_RC_BAD_CONTEXT;
    if (!size) return DIDS_TCTI_RC_BAD_REFERENCE;
    if (!tcti->pending) return DIDS_TCTI_RC_BAD_SEQUENCE;
    if (tcti->received == 0) {
        if (dids_fuzz_tpm_read(tcti->answer, DIDS_TCTI_HEADER) < DIDS_TCTI_HEADER) { tcti->pending = 0; return DIDS_TCTI_RC_IO_ERROR; }
        uint32_t length = dids_tcti_be32(tcti->answer + 2);
        if (length < DIDS_TCTI_HEADER || length > DIDS_TCTI_LARGEST) { tcti->pending = 0; return DIDS_TCTI_RC_MALFORMED_RESPONSE; }
        size_t rest = length - DIDS_TCTI_HEADER;
        if (dids_fuzz_tpm_read(tcti->answer + DIDS_TCTI_HEADER, rest) < rest) { tcti->pending = 0; return DIDS_TCTI_RC_IO_ERROR; }
        tcti->received = length;
    }
    TSS2_RC rc;
    if (dids_tcti_deliver(tcti->answer, tcti->received, size, response, &rc) == 0) tcti->pending = 0;
    return rc;
}

static void finalize(TSS2_TCTI_CONTEXT *context) {
    struct fuzz_tcti *tcti = cast(context);
    if (tcti) tcti->magic = 0;
}

static TSS2_RC set_locality(TSS2_TCTI_CONTEXT *context, uint8_t locality) {
    (void)locality;
    struct fuzz_tcti *tcti = cast(context);
    if (!tcti) return DIDS_TCTI_RC_BAD_CONTEXT;
    return tcti->pending ? DIDS_TCTI_RC_BAD_SEQUENCE : 0;
}

TSS2_TCTI_CONTEXT *dids_tcti_fuzz_open(TSS2_RC *rc) {
    slept_ms = 0;
    struct fuzz_tcti *tcti = calloc(1, sizeof *tcti);
    if (!tcti) { *rc = 0; errno = ENOMEM; return NULL; }
    *tcti = (struct fuzz_tcti){
        .magic = MAGIC, .version = 1, .transmit = transmit, .receive = receive, .finalize = finalize,
        .cancel = dids_tcti_not_implemented, .get_poll_handles = dids_tcti_no_poll_handles, .set_locality = set_locality,
    };
    return (TSS2_TCTI_CONTEXT *)tcti;
}

#endif
