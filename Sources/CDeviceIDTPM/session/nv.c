// NV indices read by DeviceID: which handles of a window the TPM holds (NV indices, or persistent
// objects for the EK), one index's whole contents (EK certificates and nonces), and a TPMT_PUBLIC
// template one holds (an EK's, a platform AK's). The counters that DeviceID defines are counter.c's.
// Every command here runs under the conversation's salted session (salted.c): the reads as the
// owner's authorisation, the questions audited, so that an answer changed on its way (another
// certificate, an index said absent) is refused by its HMAC.
#include "session.h"

#include <errno.h>
#include <string.h>


// TPM2_GetCapability answers for absent handles too, where looking one up makes tpm2-tss log an
// error. A TPM may answer with fewer handles than asked and moreData set: it is asked again from
// the handle after the last one it gave, until the window is covered.
int dids_tpm_handles_present(dids_tpm *tpm, uint32_t first, uint32_t count, int stage, uint32_t *set,
                             struct dids_tpm_failure *failure) {
    if (count == 0 || count > 256) return dids_tpm_fail(failure, stage, 0, EINVAL);
    memset(set, 0, (count + 31) / 32 * sizeof *set);
    for (uint32_t from = first; from < first + count;) {
        TPMS_CAPABILITY_DATA *data = NULL;
        TPMI_YES_NO more = 0;
        ESYS_TR session = dids_tpm_audited(tpm, failure);
        if (session == DIDS_ESYS_TR_NONE
            || !DIDS_TPM_RUN(tpm, failure, stage,
                             dids_p_Esys_GetCapability_Async(tpm->esys, session, DIDS_ESYS_TR_NONE,
                                                             DIDS_ESYS_TR_NONE, DIDS_TPM2_CAP_HANDLES, from,
                                                             first + count - from),
                             dids_p_Esys_GetCapability_Finish(tpm->esys, &more, &data)))
            return 0;
        if (data->capability != DIDS_TPM2_CAP_HANDLES) {  // an answer to another question
            dids_p_Esys_Free(data);
            return dids_tpm_fail(failure, stage, 0, EPROTO);
        }
        const unsigned char *p = (const unsigned char *)data;
        uint32_t answered = dids_get32(p + DIDS_TPMS_CAPABILITY_HANDLES_COUNT), last = from;
        for (uint32_t i = 0; i < answered && i < DIDS_TPM_MAX_CAP_HANDLES; i++) {
            uint32_t handle = dids_get32(p + DIDS_TPMS_CAPABILITY_HANDLES + 4 * i), k = handle - first;
            if (handle >= first && k < count) set[k / 32] |= 1u << (k % 32);
            if (handle >= last) last = handle;
        }
        dids_p_Esys_Free(data);
        if (!more || answered == 0 || last >= first + count - 1) break;
        from = last + 1;
    }
    return 1;
}

// Read with owner authorisation, in pieces every TPM accepts.
int dids_tpm_nv_read(dids_tpm *tpm, uint32_t handle, int stage, struct dids_tpm_bytes *out,
                     struct dids_tpm_failure *failure) {
    ESYS_TR index = DIDS_ESYS_TR_NONE, session = dids_tpm_audited(tpm, failure);
    if (session == DIDS_ESYS_TR_NONE
        || !DIDS_TPM_RUN(tpm, failure, stage,
                         dids_p_Esys_TR_FromTPMPublic_Async(tpm->esys, handle, session, DIDS_ESYS_TR_NONE,
                                                            DIDS_ESYS_TR_NONE),
                         dids_p_Esys_TR_FromTPMPublic_Finish(tpm->esys, &index)))
        return 0;
    TPM2B_NV_PUBLIC *public = NULL;
    int ok = (session = dids_tpm_audited(tpm, failure)) != DIDS_ESYS_TR_NONE
          && DIDS_TPM_RUN(tpm, failure, stage,
                          dids_p_Esys_NV_ReadPublic_Async(tpm->esys, index, session, DIDS_ESYS_TR_NONE,
                                                          DIDS_ESYS_TR_NONE),
                          dids_p_Esys_NV_ReadPublic_Finish(tpm->esys, &public, NULL));
    if (ok && dids_get32(public->nvPublic + DIDS_TPMS_NV_PUBLIC_INDEX) != handle)  // another index's
        ok = dids_tpm_fail(failure, stage, 0, EPROTO);
    size_t size = ok ? dids_get16(public->nvPublic + DIDS_TPMS_NV_PUBLIC_DATA_SIZE) : 0;
    dids_p_Esys_Free(public);
    if (ok) {
        out->size = size;
        if (size > out->capacity) ok = dids_tpm_fail(failure, stage, 0, ENOBUFS);
    }
    for (size_t offset = 0; ok && offset < size;) {
        uint16_t piece = (uint16_t)(size - offset < 512 ? size - offset : 512);
        TPM2B_MAX_NV_BUFFER *data = NULL;
        ok = (session = dids_tpm_salted(tpm, 0, failure)) != DIDS_ESYS_TR_NONE
          && (DIDS_TPM_RUN(tpm, failure, stage,
                           dids_p_Esys_NV_Read_Async(tpm->esys, DIDS_ESYS_TR_RH_OWNER, index, session,
                                                     DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE, piece, (uint16_t)offset),
                           dids_p_Esys_NV_Read_Finish(tpm->esys, &data))
              || dids_tpm_refused_salted(tpm, DIDS_ESYS_TR_RH_OWNER, failure));
        if (ok && data->size != piece) ok = dids_tpm_fail(failure, DIDS_TPM_STAGE_SHAPE, 0, 0);  // not what was asked
        if (ok) {
            memcpy(out->data + offset, data->buffer, data->size);
            offset += data->size;
        }
        dids_p_Esys_Free(data);
    }
    dids_tpm_forget(tpm, &index);
    return ok;
}

int dids_tpm_nv_template(dids_tpm *tpm, uint32_t index, int stage, TPM2B_PUBLIC *template,
                         struct dids_tpm_failure *failure) {
    unsigned char stored[DIDS_TPMT_PUBLIC_SIZE];
    struct dids_tpm_bytes marshalled = {.data = stored, .capacity = sizeof stored};
    memset(template, 0, sizeof *template);
    template->size = DIDS_TPMT_PUBLIC_SIZE;
    size_t offset = 0;
    if (!dids_tpm_nv_read(tpm, index, stage, &marshalled, failure)) {
        if (failure->error_number == ENOBUFS) failure->error_number = EBADMSG;  // larger than any TPMT_PUBLIC
        return 0;
    }
    if (dids_p_Tss2_MU_TPMT_PUBLIC_Unmarshal(stored, marshalled.size, &offset, (TPMT_PUBLIC *)template->publicArea) != 0
        || offset != marshalled.size)
        return dids_tpm_fail(failure, stage, 0, EBADMSG);
    return 1;
}
