// The this-device-only binding (docs/HARDWARE-ID.md): a key wrapped by the TPM's binding key, as
// ECIES wraps one — TPM2_ECDH_KeyGen to wrap, TPM2_ECDH_ZGen to unwrap. The binding key is a
// primary of the owner (storage) hierarchy made from a fixed template: its private part exists
// only inside this TPM, and TPM2_Clear changes it. this-device-only+pcr7's key carries an
// authPolicy of PolicyPCR over PCR 7, so that ZGen answers only while PCR 7 is what it was.
#include "session.h"

#include <errno.h>
#include <string.h>

// A P-256 point of ESAPI's TPM2B_ECC_POINT as x ‖ y (64 bytes); EPROTO at the binding stage for
// any other size (whoever answers as the TPM does not choose the shape).
static int point_out(const TPM2B_ECC_POINT *point, struct dids_tpm_bytes *out, int x_only, struct dids_tpm_failure *failure) {
    const unsigned char *p = (const unsigned char *)point;
    if (dids_get16(p + DIDS_TPM2B_ECC_POINT_X) != 32 || dids_get16(p + DIDS_TPM2B_ECC_POINT_Y) != 32)
        return dids_tpm_fail(failure, DIDS_TPM_STAGE_BINDING, 0, EPROTO);
    unsigned char xy[64];
    memcpy(xy, p + DIDS_TPM2B_ECC_POINT_X + 2, 32);
    memcpy(xy + 32, p + DIDS_TPM2B_ECC_POINT_Y + 2, 32);
    int ok = dids_tpm_put(out, xy, x_only ? 32 : 64, DIDS_TPM_STAGE_BINDING, failure);
    memset(xy, 0, sizeof xy);
    return ok;
}

// After ZGen failed under this-device-only+pcr7's policy: whether the TPM refused the policy
// (PCR 7 is not what it was at wrapping), which is an answer, `shared` empty.
static int policy_refused(struct dids_tpm_failure *failure, struct dids_tpm_bytes *shared) {
    if (failure->stage != DIDS_TPM_STAGE_BINDING || dids_tpm_rc_code(failure->rc) != DIDS_TPM2_RC_POLICY_FAIL) return 0;
    memset(failure, 0, sizeof *failure);
    shared->size = 0;
    return 1;
}

// Makes the binding key (the template of objects.c, which checks the TPM's answer against it) and
// gives its public point: the marshalled public area ends with unique's x and y, each a 16-bit
// size (32 for P-256) and the coordinate.
static int binding_key(dids_tpm *tpm, const unsigned char unique[32], const unsigned char *policy, ESYS_TR *handle,
                       struct dids_tpm_bytes *key, struct dids_tpm_failure *failure) {
    unsigned char area[2 * DIDS_TPM_ECC_PARAMETER_MAX + 256];
    struct dids_tpm_bytes public_area = {.data = area, .capacity = sizeof area};
    if (!dids_tpm_create_primary_policy(tpm, DIDS_TPM_BINDING_KEY, unique, policy, handle, &public_area, failure))
        return 0;
    const unsigned char *end = area + public_area.size;
    if (public_area.size < 68 || end[-68] != 0 || end[-67] != 32 || end[-34] != 0 || end[-33] != 32)
        return dids_tpm_fail(failure, DIDS_TPM_STAGE_BINDING, 0, EPROTO);
    unsigned char xy[64];
    memcpy(xy, end - 66, 32);
    memcpy(xy + 32, end - 32, 32);
    return dids_tpm_put(key, xy, 64, DIDS_TPM_STAGE_BINDING, failure);
}

// PCR 7 of the SHA-256 bank, the one selection this-device-only+pcr7 makes.
static void pcr7_selection(TPML_PCR_SELECTION *pcrs) {
    memset(pcrs, 0, sizeof *pcrs);
    pcrs->count = 1;
    dids_put16(pcrs->pcrSelections + DIDS_TPMS_PCR_SELECTION_HASH, DIDS_TPM2_ALG_SHA256);
    pcrs->pcrSelections[DIDS_TPMS_PCR_SELECTION_SIZE] = 3;
    pcrs->pcrSelections[DIDS_TPMS_PCR_SELECTION_SELECT] = 1u << 7;
}

int dids_tpm_pcr7(dids_tpm *tpm, struct dids_tpm_bytes *value, struct dids_tpm_failure *failure) {
    TPML_PCR_SELECTION pcrs, *selected = NULL;
    TPML_DIGEST *values = NULL;
    uint32_t counter = 0;
    pcr7_selection(&pcrs);
    int ok = DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_BINDING,
                          dids_p_Esys_PCR_Read_Async(tpm->esys, DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE, &pcrs),
                          dids_p_Esys_PCR_Read_Finish(tpm->esys, &counter, &selected, &values));
    // A bank the TPM has not allocated comes back deselected, with no value: PolicyPCR would then
    // bind to nothing at all.
    if (ok && (values->count != 1 || values->digests[0].size != 32))
        ok = dids_tpm_fail(failure, DIDS_TPM_STAGE_BINDING, 0, EOPNOTSUPP);
    if (ok) ok = dids_tpm_put(value, values->digests[0].buffer, 32, DIDS_TPM_STAGE_BINDING, failure);
    dids_p_Esys_Free(selected);
    dids_p_Esys_Free(values);
    return ok;
}

// A session of `type` with PolicyPCR over PCR 7 as it is now (an empty pcrDigest: the TPM takes
// the current value), then PolicyAuthValue, so that the session carries an HMAC keyed by its
// session key as the salted session's does: a TRIAL session to compute the digest, or the POLICY
// session that authorises ZGen, salted to `salt_key` (the binding key itself) with AES-128-CFB so
// that it also encrypts the ephemeral point in and the shared point out.
static int pcr7_session(dids_tpm *tpm, uint8_t type, ESYS_TR salt_key, ESYS_TR *session,
                        struct dids_tpm_failure *failure) {
    const TPMT_SYM_DEF no_symmetric = {.algorithm = DIDS_TPM2_ALG_NULL};
    const TPMT_SYM_DEF aes = {.algorithm = DIDS_TPM2_ALG_AES, .keyBits = 128, .mode = DIDS_TPM2_ALG_CFB};
    TPML_PCR_SELECTION pcrs;
    pcr7_selection(&pcrs);
    const TPM2B_DIGEST now = {.size = 0};
    return DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_BINDING,
                        dids_p_Esys_StartAuthSession_Async(tpm->esys, salt_key, DIDS_ESYS_TR_NONE,
                                                           DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE, NULL,
                                                           type, salt_key == DIDS_ESYS_TR_NONE ? &no_symmetric : &aes,
                                                           DIDS_TPM2_ALG_SHA256),
                        dids_p_Esys_StartAuthSession_Finish(tpm->esys, session))
        && DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_BINDING,
                        dids_p_Esys_PolicyPCR_Async(tpm->esys, *session, DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE,
                                                    DIDS_ESYS_TR_NONE, &now, &pcrs),
                        dids_p_Esys_PolicyPCR_Finish(tpm->esys))
        && DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_BINDING,
                        dids_p_Esys_PolicyAuthValue_Async(tpm->esys, *session, DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE,
                                                          DIDS_ESYS_TR_NONE),
                        dids_p_Esys_PolicyAuthValue_Finish(tpm->esys));
}

// The authPolicy of PolicyPCR over PCR 7 as it is now and PolicyAuthValue, as the TPM computes it
// (a trial session):
// no second statement of the policy's hash chain to drift from the TPM's.
static int pcr7_policy(dids_tpm *tpm, unsigned char policy[32], struct dids_tpm_failure *failure) {
    unsigned char value[32];
    struct dids_tpm_bytes pcr = {.data = value, .capacity = sizeof value};
    ESYS_TR trial = DIDS_ESYS_TR_NONE;
    TPM2B_DIGEST *digest = NULL;
    int ok = dids_tpm_pcr7(tpm, &pcr, failure) && pcr7_session(tpm, DIDS_TPM2_SE_TRIAL, DIDS_ESYS_TR_NONE, &trial, failure)
          && DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_BINDING,
                          dids_p_Esys_PolicyGetDigest_Async(tpm->esys, trial, DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE,
                                                            DIDS_ESYS_TR_NONE),
                          dids_p_Esys_PolicyGetDigest_Finish(tpm->esys, &digest));
    if (ok && digest->size != 32) ok = dids_tpm_fail(failure, DIDS_TPM_STAGE_BINDING, 0, EPROTO);
    if (ok) memcpy(policy, digest->buffer, 32);
    dids_p_Esys_Free(digest);
    dids_tpm_flush(tpm, &trial);
    return ok;
}

int dids_tpm_binding_wrap(dids_tpm *tpm, const unsigned char unique[32], struct dids_tpm_bytes *policy,
                          struct dids_tpm_bytes *key, struct dids_tpm_bytes *ephemeral, struct dids_tpm_bytes *shared,
                          struct dids_tpm_failure *failure) {
    ESYS_TR handle = DIDS_ESYS_TR_NONE, session = DIDS_ESYS_TR_NONE;
    TPM2B_ECC_POINT *z = NULL, *q = NULL;
    unsigned char digest[32];
    // KeyGen needs no authorisation; the salted session rides along to encrypt its first answer,
    // the shared point, and HMAC the rest: an interposer on the bus neither reads nor swaps it.
    int ok = (!policy || (pcr7_policy(tpm, digest, failure)
                          && dids_tpm_put(policy, digest, 32, DIDS_TPM_STAGE_BINDING, failure)))
          && binding_key(tpm, unique, policy ? digest : NULL, &handle, key, failure)
          && (session = dids_tpm_salted(tpm, DIDS_TPMA_SESSION_ENCRYPT, failure)) != DIDS_ESYS_TR_NONE
          && (DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_BINDING,
                           dids_p_Esys_ECDH_KeyGen_Async(tpm->esys, handle, session, DIDS_ESYS_TR_NONE,
                                                         DIDS_ESYS_TR_NONE),
                           dids_p_Esys_ECDH_KeyGen_Finish(tpm->esys, &z, &q))
              || dids_tpm_refused_salted(tpm, DIDS_ESYS_TR_NONE, failure))
          && point_out(q, ephemeral, 0, failure) && point_out(z, shared, 1, failure);
    if (z) memset(z, 0, sizeof *z);
    dids_p_Esys_Free(z);
    dids_p_Esys_Free(q);
    dids_tpm_flush(tpm, &handle);
    return ok;
}

int dids_tpm_binding_unwrap(dids_tpm *tpm, const unsigned char unique[32], const unsigned char *policy,
                            const unsigned char *ephemeral, struct dids_tpm_bytes *key, struct dids_tpm_bytes *shared,
                            struct dids_tpm_failure *failure) {
    ESYS_TR handle = DIDS_ESYS_TR_NONE, pcr_session = DIDS_ESYS_TR_NONE;
    TPM2B_ECC_POINT in, *z = NULL;
    memset(&in, 0, sizeof in);
    int ok = binding_key(tpm, unique, policy, &handle, key, failure);
    if (ok && ephemeral) {
        unsigned char *p = (unsigned char *)&in;
        in.size = 2 + 32 + 2 + 32;
        dids_put16(p + DIDS_TPM2B_ECC_POINT_X, 32);
        memcpy(p + DIDS_TPM2B_ECC_POINT_X + 2, ephemeral, 32);
        dids_put16(p + DIDS_TPM2B_ECC_POINT_Y, 32);
        memcpy(p + DIDS_TPM2B_ECC_POINT_Y + 2, ephemeral + 32, 32);
        // The binding key's authorisation is the salted session: the ephemeral point goes
        // encrypted, the shared point comes back encrypted. With a policy, the policy session
        // authorises, salted to the binding key and encrypting both points the same way; the
        // conversation's salted session is flushed first (dids_tpm_salted starts another if a
        // later command needs one): a TPM without a resource manager (a swtpm) keeps three
        // sessions, and two conversations at once (the keyring's envelope and the file's) would
        // otherwise need four.
        ESYS_TR session = DIDS_ESYS_TR_NONE;
        if (policy) {
            dids_tpm_flush(tpm, &tpm->salted);
            if (pcr7_session(tpm, DIDS_TPM2_SE_POLICY, handle, &pcr_session, failure)) {
                dids_computing_begin();
                TSS2_RC rc = dids_p_Esys_TRSess_SetAttributes(
                    tpm->esys, pcr_session,
                    DIDS_TPMA_SESSION_CONTINUE | DIDS_TPMA_SESSION_DECRYPT | DIDS_TPMA_SESSION_ENCRYPT, 0xff);
                dids_computing_end();
                if (rc == 0) session = pcr_session;
                else dids_tpm_fail(failure, DIDS_TPM_STAGE_BINDING, rc, 0);
            }
        } else {
            session = dids_tpm_salted(tpm, DIDS_TPMA_SESSION_DECRYPT | DIDS_TPMA_SESSION_ENCRYPT, failure);
        }
        ok = session != DIDS_ESYS_TR_NONE
          && (DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_BINDING,
                           dids_p_Esys_ECDH_ZGen_Async(tpm->esys, handle, session, DIDS_ESYS_TR_NONE,
                                                       DIDS_ESYS_TR_NONE, &in),
                           dids_p_Esys_ECDH_ZGen_Finish(tpm->esys, &z))
              || (policy && policy_refused(failure, shared))
              || dids_tpm_refused_salted(tpm, DIDS_ESYS_TR_NONE, failure))
          && (!z || point_out(z, shared, 1, failure));
    }
    if (z) memset(z, 0, sizeof *z);
    dids_p_Esys_Free(z);
    dids_tpm_flush(tpm, &pcr_session);
    dids_tpm_flush(tpm, &handle);
    return ok;
}
