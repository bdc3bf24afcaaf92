// The transient objects and sessions the TPM made in one conversation, as the TPM's own answers
// say, kept beneath ESAPI: a TCTI of the session's that ESAPI speaks through, passing every byte
// to the transport and noting each answer to TPM2_CreatePrimary and TPM2_StartAuthSession (a
// handle made) and to TPM2_FlushContext (a handle gone). ESAPI cannot be relied on to flush them:
// after an Esys_*_Finish fails to parse an answer it refuses every later command (BAD_SEQUENCE),
// and a CreatePrimary whose answer it could not parse gave it no handle to flush at all. What the
// ledger still holds when the conversation ends is flushed by TPM2_FlushContext commands of its
// own, through the transport (dids_tpm_ledger_flush): on a swtpm, which has no resource manager
// and three object slots, two such answers would otherwise leave it unusable until it restarts.
#include "session.h"

#include <stdlib.h>
#include <string.h>

#define MAGIC 0x4c65646765724944ull  // "LedgerID"
#define CC_CREATE_PRIMARY 0x131u
#define CC_FLUSH_CONTEXT 0x165u
#define CC_START_AUTH_SESSION 0x176u
#define HELD_MAX 16

struct dids_tpm_ledger {
    DIDS_TCTI_COMMON_V1
    TSS2_TCTI_CONTEXT *transport;
    uint32_t command;   // the code of the command under way
    uint32_t flushing;  // FlushContext's handle
    uint32_t held[HELD_MAX];
    size_t count;
};

static struct dids_tpm_ledger *cast(TSS2_TCTI_CONTEXT *context) {
    struct dids_tpm_ledger *ledger = (struct dids_tpm_ledger *)context;
    return ledger && ledger->magic == MAGIC ? ledger : NULL;
}

static const struct dids_tcti_common *common(TSS2_TCTI_CONTEXT *transport) {
    return (const struct dids_tcti_common *)transport;
}

// A handle a transient object or a session has (TPM_HT_TRANSIENT, HMAC_SESSION, POLICY_SESSION):
// a handle of another kind in an answer is not one to flush, whatever it claims.
static int flushable(uint32_t handle) {
    uint32_t kind = handle >> 24;
    return kind == 0x80u || kind == 0x02u || kind == 0x03u;
}

static void note(struct dids_tpm_ledger *ledger, uint32_t handle) {
    for (size_t i = 0; i < ledger->count; i++)
        if (ledger->held[i] == handle) return;
    if (ledger->count < HELD_MAX) ledger->held[ledger->count++] = handle;
}

static void forget(struct dids_tpm_ledger *ledger, uint32_t handle) {
    for (size_t i = 0; i < ledger->count; i++)
        if (ledger->held[i] == handle) { ledger->held[i] = ledger->held[--ledger->count]; return; }
}

static TSS2_RC transmit(TSS2_TCTI_CONTEXT *context, size_t size, const uint8_t *command) {
    struct dids_tpm_ledger *ledger = cast(context);
    if (!ledger) return DIDS_TCTI_RC_BAD_CONTEXT;
    ledger->command = command && size >= DIDS_TCTI_HEADER ? dids_tcti_be32(command + 6) : 0;
    ledger->flushing = ledger->command == CC_FLUSH_CONTEXT && size >= DIDS_TCTI_HEADER + 4
                     ? dids_tcti_be32(command + DIDS_TCTI_HEADER) : 0;
    return common(ledger->transport)->transmit(ledger->transport, size, command);
}

static TSS2_RC receive(TSS2_TCTI_CONTEXT *context, size_t *size, uint8_t *response, int32_t timeout) {
    struct dids_tpm_ledger *ledger = cast(context);
    if (!ledger) return DIDS_TCTI_RC_BAD_CONTEXT;
    TSS2_RC rc = common(ledger->transport)->receive(ledger->transport, size, response, timeout);
    if (rc != 0 || !response || !size || *size < DIDS_TCTI_HEADER || dids_tcti_be32(response + 6) != 0) return rc;
    if ((ledger->command == CC_CREATE_PRIMARY || ledger->command == CC_START_AUTH_SESSION)
        && *size >= DIDS_TCTI_HEADER + 4 && flushable(dids_tcti_be32(response + DIDS_TCTI_HEADER)))
        note(ledger, dids_tcti_be32(response + DIDS_TCTI_HEADER));
    if (ledger->command == CC_FLUSH_CONTEXT) forget(ledger, ledger->flushing);
    return rc;
}

static void finalize(TSS2_TCTI_CONTEXT *context) {
    struct dids_tpm_ledger *ledger = cast(context);
    if (ledger) ledger->magic = 0;
}

static TSS2_RC cancel(TSS2_TCTI_CONTEXT *context) {
    struct dids_tpm_ledger *ledger = cast(context);
    return ledger ? common(ledger->transport)->cancel(ledger->transport) : DIDS_TCTI_RC_BAD_CONTEXT;
}

static TSS2_RC get_poll_handles(TSS2_TCTI_CONTEXT *context, void *handles, size_t *count) {
    struct dids_tpm_ledger *ledger = cast(context);
    return ledger ? common(ledger->transport)->get_poll_handles(ledger->transport, handles, count)
                  : DIDS_TCTI_RC_BAD_CONTEXT;
}

static TSS2_RC set_locality(TSS2_TCTI_CONTEXT *context, uint8_t locality) {
    struct dids_tpm_ledger *ledger = cast(context);
    return ledger ? common(ledger->transport)->set_locality(ledger->transport, locality) : DIDS_TCTI_RC_BAD_CONTEXT;
}

TSS2_TCTI_CONTEXT *dids_tpm_ledger_open(TSS2_TCTI_CONTEXT *transport) {
    struct dids_tpm_ledger *ledger = calloc(1, sizeof *ledger);
    if (!ledger) return NULL;
    *ledger = (struct dids_tpm_ledger){
        .magic = MAGIC, .version = 1, .transmit = transmit, .receive = receive, .finalize = finalize,
        .cancel = cancel, .get_poll_handles = get_poll_handles, .set_locality = set_locality, .transport = transport,
    };
    return (TSS2_TCTI_CONTEXT *)ledger;
}

// TPM2_FlushContext of `handle`, sent through the transport by the deadline, as ESAPI would send
// it (tag TPM_ST_NO_SESSIONS, no authorisation). 1 when the TPM flushed it or holds no such handle.
static int flush_one(struct dids_tpm_ledger *ledger, uint32_t handle, uint64_t deadline_ms) {
    uint8_t command[DIDS_TCTI_HEADER + 4] = {0x80, 0x01, 0, 0, 0, sizeof command, 0, 0,
                                             (uint8_t)(CC_FLUSH_CONTEXT >> 8), (uint8_t)CC_FLUSH_CONTEXT,
                                             (uint8_t)(handle >> 24), (uint8_t)(handle >> 16), (uint8_t)(handle >> 8),
                                             (uint8_t)handle};
    const struct dids_tcti_common *transport = common(ledger->transport);
    if (transport->transmit(ledger->transport, sizeof command, command) != 0) return 0;
    uint8_t answer[DIDS_TCTI_LARGEST];
    for (;;) {
        uint64_t now = dids_tcti_now_ms();
        if (now >= deadline_ms) return 0;
        size_t size = sizeof answer;
        TSS2_RC rc = transport->receive(ledger->transport, &size, answer, (int32_t)(deadline_ms - now < INT32_MAX
                                                                                     ? deadline_ms - now : INT32_MAX));
        if ((rc & 0xffffu) == DIDS_TSS2_BASE_RC_TRY_AGAIN) continue;
        if (rc != 0 || size < DIDS_TCTI_HEADER) return 0;
        uint32_t code = dids_tpm_rc_code(dids_tcti_be32(answer + 6));
        return code == 0 || code == DIDS_TPM2_RC_HANDLE;
    }
}

int dids_tpm_ledger_flush(TSS2_TCTI_CONTEXT *context, uint64_t deadline_ms) {
    struct dids_tpm_ledger *ledger = cast(context);
    if (!ledger) return 0;
    int flushed = 0;
    while (ledger->count > 0) {
        uint32_t handle = ledger->held[--ledger->count];
        flushed += flush_one(ledger, handle, deadline_ms);
    }
    return flushed;
}

void dids_tpm_ledger_free(TSS2_TCTI_CONTEXT *context) {
    finalize(context);
    free(context);
}
