// An app's assertion counter: a TPM NV counter index (TPM_NT_COUNTER) in the owner range, found by
// its tag (docs/HARDWARE-ID.md, "Assertions"). A counter only grows: the TPM initialises a newly
// defined counter to at least the largest count any counter on it has had, so undefining and
// defining one again never gives a count it gave before. Every command runs under the
// conversation's salted session (salted.c): NV_DefineSpace, NV_Increment and NV_Read authorised by
// it, NV_ReadPublic audited, so that a count (or an index's public area) changed on its way is
// refused by its HMAC: whoever sits between cannot answer an older count, or another's.
#include "session.h"

#include <errno.h>
#include <string.h>

// How many slots after the one the tag names are tried: an index there that is not this app's
// counter (another program's, or another app's whose tag named a nearby slot) moves it on.
#define PROBES 8


enum slot { SLOT_OURS, SLOT_OTHER, SLOT_FAILED };

// What the NV index at `handle` is; for SLOT_OURS, `index` is its ESAPI handle (closed by the
// caller) and `written` whether it has been incremented.
static enum slot look(dids_tpm *tpm, uint32_t handle, const unsigned char tag[32], ESYS_TR *index, int *written,
                      struct dids_tpm_failure *failure) {
    *index = DIDS_ESYS_TR_NONE;
    ESYS_TR session = dids_tpm_audited(tpm, failure);
    if (session == DIDS_ESYS_TR_NONE
        || !DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_COUNTER,
                         dids_p_Esys_TR_FromTPMPublic_Async(tpm->esys, handle, session, DIDS_ESYS_TR_NONE,
                                                            DIDS_ESYS_TR_NONE),
                         dids_p_Esys_TR_FromTPMPublic_Finish(tpm->esys, index))) {
        *index = DIDS_ESYS_TR_NONE;
        return SLOT_FAILED;
    }
    TPM2B_NV_PUBLIC *public = NULL;
    if ((session = dids_tpm_audited(tpm, failure)) == DIDS_ESYS_TR_NONE
        || !DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_COUNTER,
                         dids_p_Esys_NV_ReadPublic_Async(tpm->esys, *index, session, DIDS_ESYS_TR_NONE,
                                                         DIDS_ESYS_TR_NONE),
                         dids_p_Esys_NV_ReadPublic_Finish(tpm->esys, &public, NULL)))
        return SLOT_FAILED;
    const unsigned char *p = public->nvPublic;
    if (dids_get32(p + DIDS_TPMS_NV_PUBLIC_INDEX) != handle) {  // an answer for another index
        dids_p_Esys_Free(public);
        dids_tpm_fail(failure, DIDS_TPM_STAGE_COUNTER, 0, EPROTO);
        return SLOT_FAILED;
    }
    *written = (dids_get32(p + DIDS_TPMS_NV_PUBLIC_ATTRIBUTES) & DIDS_TPMA_NV_WRITTEN) != 0;
    int ours = dids_get16(p + DIDS_TPMS_NV_PUBLIC_NAME_ALG) == DIDS_TPM2_ALG_SHA256
            && (dids_get32(p + DIDS_TPMS_NV_PUBLIC_ATTRIBUTES) & ~DIDS_TPMA_NV_WRITTEN) == DIDS_TPM_COUNTER_ATTRIBUTES
            && dids_get16(p + DIDS_TPMS_NV_PUBLIC_AUTH_POLICY) == 32
            && memcmp(p + DIDS_TPMS_NV_PUBLIC_AUTH_POLICY + 2, tag, 32) == 0
            && dids_get16(p + DIDS_TPMS_NV_PUBLIC_DATA_SIZE) == 8;
    dids_p_Esys_Free(public);
    return ours ? SLOT_OURS : SLOT_OTHER;
}

// Defines this app's counter at `handle`. 1 with `index` set; 0 with `failure` set (NV_DEFINED:
// another process defined one there meanwhile).
static int define(dids_tpm *tpm, uint32_t handle, const unsigned char tag[32], ESYS_TR *index,
                  struct dids_tpm_failure *failure) {
    TPM2B_NV_PUBLIC public;
    memset(&public, 0, sizeof public);
    unsigned char *p = public.nvPublic;
    dids_put32(p + DIDS_TPMS_NV_PUBLIC_INDEX, handle);
    dids_put16(p + DIDS_TPMS_NV_PUBLIC_NAME_ALG, DIDS_TPM2_ALG_SHA256);
    dids_put32(p + DIDS_TPMS_NV_PUBLIC_ATTRIBUTES, DIDS_TPM_COUNTER_ATTRIBUTES);
    dids_put16(p + DIDS_TPMS_NV_PUBLIC_AUTH_POLICY, 32);
    memcpy(p + DIDS_TPMS_NV_PUBLIC_AUTH_POLICY + 2, tag, 32);
    dids_put16(p + DIDS_TPMS_NV_PUBLIC_DATA_SIZE, 8);
    public.size = 4 + 2 + 4 + 2 + 32 + 2;  // marshalled TPMS_NV_PUBLIC
    TPM2B_AUTH no_auth;
    memset(&no_auth, 0, sizeof no_auth);
    *index = DIDS_ESYS_TR_NONE;
    ESYS_TR session = dids_tpm_salted(tpm, 0, failure);
    if (session != DIDS_ESYS_TR_NONE
        && DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_COUNTER,
                        dids_p_Esys_NV_DefineSpace_Async(tpm->esys, DIDS_ESYS_TR_RH_OWNER, session,
                                                         DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE, &no_auth, &public),
                        dids_p_Esys_NV_DefineSpace_Finish(tpm->esys, index)))
        return 1;
    *index = DIDS_ESYS_TR_NONE;
    if (session != DIDS_ESYS_TR_NONE) dids_tpm_refused_salted(tpm, DIDS_ESYS_TR_RH_OWNER, failure);
    return 0;
}

// Finds this app's counter among the indices of the window, or else defines it in the window's
// first free slot (never before looking at every occupied one: a slot freed before this app's
// counter must not give it a second one). 1 with `index`, `handle` and `written`.
static int find(dids_tpm *tpm, const unsigned char tag[32], ESYS_TR *index, uint32_t *handle, int *written,
                struct dids_tpm_failure *failure) {
    // The slots never wrap past the range's end: the first is taken below COUNT - PROBES.
    uint32_t first = DIDS_TPM_OWNER_NV_FIRST
                   + ((uint32_t)tag[0] << 16 | (uint32_t)tag[1] << 8 | tag[2]) % (DIDS_TPM_OWNER_NV_COUNT - PROBES);
    for (int attempt = 0; attempt < 2; attempt++) {  // a second look after another process's define
        uint32_t set;
        int free_slot = -1;
        if (!dids_tpm_handles_present(tpm, first, PROBES, DIDS_TPM_STAGE_COUNTER, &set, failure)) return 0;
        for (uint32_t k = 0; k < PROBES; k++) {
            *handle = first + k;
            if (!(set & (1u << k))) {
                if (free_slot < 0) free_slot = (int)k;
                continue;
            }
            switch (look(tpm, *handle, tag, index, written, failure)) {
            case SLOT_OURS: return 1;
            case SLOT_OTHER: dids_tpm_forget(tpm, index); break;
            case SLOT_FAILED: dids_tpm_forget(tpm, index); return 0;
            }
        }
        if (free_slot < 0) return dids_tpm_fail(failure, DIDS_TPM_STAGE_COUNTER, 0, ENOSPC);
        *handle = first + (uint32_t)free_slot;
        *written = 0;
        if (define(tpm, *handle, tag, index, failure)) return 1;
        if (failure->stage != DIDS_TPM_STAGE_COUNTER || dids_tpm_rc_code(failure->rc) != DIDS_TPM2_RC_NV_DEFINED) return 0;
    }
    return dids_tpm_fail(failure, DIDS_TPM_STAGE_COUNTER, DIDS_TPM2_RC_NV_DEFINED, 0);
}

// The counter's own authorisation (it has no password) is the salted session's.
static int increment(dids_tpm *tpm, ESYS_TR index, struct dids_tpm_failure *failure) {
    ESYS_TR session = dids_tpm_salted(tpm, 0, failure);
    return session != DIDS_ESYS_TR_NONE
        && (DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_COUNTER,
                         dids_p_Esys_NV_Increment_Async(tpm->esys, index, index, session,
                                                        DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE),
                         dids_p_Esys_NV_Increment_Finish(tpm->esys))
            || dids_tpm_refused_salted(tpm, DIDS_ESYS_TR_NONE, failure));
}

static int read_count(dids_tpm *tpm, ESYS_TR index, uint64_t *value, struct dids_tpm_failure *failure) {
    TPM2B_MAX_NV_BUFFER *data = NULL;
    ESYS_TR session = dids_tpm_salted(tpm, 0, failure);
    int ok = session != DIDS_ESYS_TR_NONE
          && (DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_COUNTER,
                           dids_p_Esys_NV_Read_Async(tpm->esys, index, index, session, DIDS_ESYS_TR_NONE,
                                                     DIDS_ESYS_TR_NONE, 8, 0),
                           dids_p_Esys_NV_Read_Finish(tpm->esys, &data))
              || dids_tpm_refused_salted(tpm, DIDS_ESYS_TR_NONE, failure));
    if (ok && data->size != 8) ok = dids_tpm_fail(failure, DIDS_TPM_STAGE_SHAPE, 0, 0);
    if (ok) {
        *value = 0;
        for (int i = 0; i < 8; i++) *value = *value << 8 | data->buffer[i];  // big-endian, as the TPM keeps it
    }
    dids_p_Esys_Free(data);
    return ok;
}

// How many times a count is tried for while other processes increment the same counter.
#define CLAIMS 16

int dids_tpm_counter_increment(dids_tpm *tpm, const unsigned char tag[32], uint32_t *index_handle, uint64_t *value,
                               struct dids_tpm_failure *failure) {
    ESYS_TR index = DIDS_ESYS_TR_NONE;
    int written = 0;
    if (!find(tpm, tag, &index, index_handle, &written, failure)) return 0;
    // NV_Increment answers nothing, and another process may increment between it and NV_Read: two
    // processes would then both read one count. A count is this call's only when it reads v0,
    // increments and reads v0 + 1: exactly one increment happened between its reads, its own, and
    // no other process can read v0 + 1 after an increment of its own. Otherwise it tries again
    // (the counts others took, or a TPM restarted meanwhile, are skipped). An index never
    // incremented cannot be read: its first increment is made first.
    int ok = written || increment(tpm, index, failure), claimed = 0;
    for (int attempt = 0; ok && !claimed && attempt < CLAIMS; attempt++) {
        uint64_t before = 0;
        ok = read_count(tpm, index, &before, failure) && increment(tpm, index, failure)
          && read_count(tpm, index, value, failure);
        claimed = ok && *value == before + 1;
    }
    if (ok && !claimed) ok = dids_tpm_fail(failure, DIDS_TPM_STAGE_COUNTER, 0, EBUSY);
    dids_tpm_forget(tpm, &index);
    return ok;
}
