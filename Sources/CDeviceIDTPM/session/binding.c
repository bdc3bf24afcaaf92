// The this-device-only binding (docs/HARDWARE-ID.md): a key wrapped by the TPM's binding key, as
// ECIES wraps one — TPM2_ECDH_KeyGen to wrap, TPM2_ECDH_ZGen to unwrap. The binding key is a
// primary of the owner (storage) hierarchy made from a fixed template: its private part exists
// only inside this TPM, and TPM2_Clear changes it.
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

// Makes the binding key (the template of objects.c, which checks the TPM's answer against it) and
// gives its public point: the marshalled public area ends with unique's x and y, each a 16-bit
// size (32 for P-256) and the coordinate.
static int binding_key(dids_tpm *tpm, const unsigned char unique[32], ESYS_TR *handle, struct dids_tpm_bytes *key,
                       struct dids_tpm_failure *failure) {
    unsigned char area[2 * DIDS_TPM_ECC_PARAMETER_MAX + 256];
    struct dids_tpm_bytes public_area = {.data = area, .capacity = sizeof area};
    if (!dids_tpm_create_primary(tpm, DIDS_TPM_BINDING_KEY, unique, handle, &public_area, failure)) return 0;
    const unsigned char *end = area + public_area.size;
    if (public_area.size < 68 || end[-68] != 0 || end[-67] != 32 || end[-34] != 0 || end[-33] != 32)
        return dids_tpm_fail(failure, DIDS_TPM_STAGE_BINDING, 0, EPROTO);
    unsigned char xy[64];
    memcpy(xy, end - 66, 32);
    memcpy(xy + 32, end - 32, 32);
    return dids_tpm_put(key, xy, 64, DIDS_TPM_STAGE_BINDING, failure);
}

int dids_tpm_binding_wrap(dids_tpm *tpm, const unsigned char unique[32], struct dids_tpm_bytes *key,
                          struct dids_tpm_bytes *ephemeral, struct dids_tpm_bytes *shared, struct dids_tpm_failure *failure) {
    ESYS_TR handle = DIDS_ESYS_TR_NONE, session = DIDS_ESYS_TR_NONE;
    TPM2B_ECC_POINT *z = NULL, *q = NULL;
    // KeyGen needs no authorisation; the salted session rides along to encrypt its first answer,
    // the shared point, and HMAC the rest: an interposer on the bus neither reads nor swaps it.
    int ok = binding_key(tpm, unique, &handle, key, failure)
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

int dids_tpm_binding_unwrap(dids_tpm *tpm, const unsigned char unique[32], const unsigned char *ephemeral,
                            struct dids_tpm_bytes *key, struct dids_tpm_bytes *shared, struct dids_tpm_failure *failure) {
    ESYS_TR handle = DIDS_ESYS_TR_NONE;
    TPM2B_ECC_POINT in, *z = NULL;
    memset(&in, 0, sizeof in);
    int ok = binding_key(tpm, unique, &handle, key, failure);
    if (ok && ephemeral) {
        unsigned char *p = (unsigned char *)&in;
        in.size = 2 + 32 + 2 + 32;
        dids_put16(p + DIDS_TPM2B_ECC_POINT_X, 32);
        memcpy(p + DIDS_TPM2B_ECC_POINT_X + 2, ephemeral, 32);
        dids_put16(p + DIDS_TPM2B_ECC_POINT_Y, 32);
        memcpy(p + DIDS_TPM2B_ECC_POINT_Y + 2, ephemeral + 32, 32);
        // The binding key's authorisation is the salted session: the ephemeral point goes
        // encrypted, the shared point comes back encrypted.
        ESYS_TR session = dids_tpm_salted(tpm, DIDS_TPMA_SESSION_DECRYPT | DIDS_TPMA_SESSION_ENCRYPT, failure);
        ok = session != DIDS_ESYS_TR_NONE
          && (DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_BINDING,
                           dids_p_Esys_ECDH_ZGen_Async(tpm->esys, handle, session, DIDS_ESYS_TR_NONE,
                                                       DIDS_ESYS_TR_NONE, &in),
                           dids_p_Esys_ECDH_ZGen_Finish(tpm->esys, &z))
              || dids_tpm_refused_salted(tpm, DIDS_ESYS_TR_NONE, failure))
          && point_out(z, shared, 1, failure);
    }
    if (z) memset(z, 0, sizeof *z);
    dids_p_Esys_Free(z);
    dids_tpm_flush(tpm, &handle);
    return ok;
}
