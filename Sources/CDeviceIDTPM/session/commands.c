// What DeviceID asks of the TPM (docs/HARDWARE-ID.md): the app key's and credential key's Names,
// the attestation key's public area, Certify and Sign (the EK's commands are endorsement.c's). Each
// makes its primaries, uses them, and flushes them on every path.
#include "session.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>


int dids_tpm_name(dids_tpm *tpm, ESYS_TR key, TPM2B_NAME **name, struct dids_tpm_failure *failure) {
    *name = NULL;
    dids_computing_begin();
    TSS2_RC rc = dids_p_Esys_TR_GetName(tpm->esys, key, name);
    dids_computing_end();
    return rc == 0 ? 1 : dids_tpm_fail(failure, DIDS_TPM_STAGE_NAME, rc, 0);
}

int dids_tpm_key_name(dids_tpm *tpm, enum dids_tpm_key kind, const unsigned char unique[32],
                      struct dids_tpm_bytes *name, struct dids_tpm_bytes *public_area,
                      struct dids_tpm_failure *failure) {
    if (kind != DIDS_TPM_APP_KEY && kind != DIDS_TPM_CREDENTIAL_KEY)
        return dids_tpm_fail(failure, DIDS_TPM_STAGE_CREATE, 0, EINVAL);
    ESYS_TR key;
    if (!dids_tpm_create_primary(tpm, kind, unique, &key, public_area, failure)) {
        dids_tpm_flush(tpm, &key);
        return 0;
    }
    TPM2B_NAME *key_name = NULL;
    int ok = dids_tpm_name(tpm, key, &key_name, failure)
          && dids_tpm_put(name, key_name->name, key_name->size, DIDS_TPM_STAGE_NAME, failure);
    dids_p_Esys_Free(key_name);
    dids_tpm_flush(tpm, &key);
    return ok;
}

int dids_tpm_properties(dids_tpm *tpm, uint32_t first, uint32_t count, uint32_t *values,
                        struct dids_tpm_failure *failure) {
    if (count > 16) return dids_tpm_fail(failure, DIDS_TPM_STAGE_PROPERTIES, 0, EINVAL);
    memset(values, 0, count * sizeof *values);
    TPMS_CAPABILITY_DATA *data = NULL;
    TPMI_YES_NO more = 0;
    ESYS_TR session = dids_tpm_audited(tpm, failure);
    if (session == DIDS_ESYS_TR_NONE
        || !DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_PROPERTIES,
                         dids_p_Esys_GetCapability_Async(tpm->esys, session, DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE,
                                                         DIDS_TPM2_CAP_TPM_PROPERTIES, first, count),
                         dids_p_Esys_GetCapability_Finish(tpm->esys, &more, &data)))
        return 0;
    if (data->capability != DIDS_TPM2_CAP_TPM_PROPERTIES) {  // an answer to another question
        dids_p_Esys_Free(data);
        return dids_tpm_fail(failure, DIDS_TPM_STAGE_PROPERTIES, 0, EPROTO);
    }
    const unsigned char *p = (const unsigned char *)data;
    uint32_t answered = dids_get32(p + DIDS_TPMS_CAPABILITY_HANDLES_COUNT);
    for (uint32_t i = 0; i < answered && i < count; i++) {
        uint32_t property = dids_get32(p + DIDS_TPMS_CAPABILITY_HANDLES + 8 * i);
        if (property >= first && property < first + count)
            values[property - first] = dids_get32(p + DIDS_TPMS_CAPABILITY_HANDLES + 8 * i + 4);
    }
    dids_p_Esys_Free(data);
    return 1;
}

int dids_tpm_ak_public(dids_tpm *tpm, const unsigned char ak_unique[32], struct dids_tpm_bytes *ak_public,
                       struct dids_tpm_failure *failure) {
    ESYS_TR ak;
    int ok = dids_tpm_create_primary(tpm, DIDS_TPM_ATTESTATION_KEY, ak_unique, &ak, ak_public, failure);
    dids_tpm_flush(tpm, &ak);
    return ok;
}

// The marshalled TPMT_SIGNATURE of an ECDSA signature (sigAlg, hash, r and s as TPM2Bs) or an
// RSASSA one (sigAlg, hash, the signature as a TPM2B): a platform AK may be RSA.
int dids_tpm_marshal_signature(const TPMT_SIGNATURE *s, struct dids_tpm_bytes *out, struct dids_tpm_failure *failure) {
    const unsigned char *p = (const unsigned char *)s;
    const unsigned char *parameters[2];
    uint16_t sizes[2];
    int count;
    if (s->sigAlg == DIDS_TPM2_ALG_ECDSA) {
        parameters[0] = p + DIDS_TPMT_SIGNATURE_ECDSA_R, parameters[1] = p + DIDS_TPMT_SIGNATURE_ECDSA_S;
        sizes[0] = dids_get16(parameters[0]), sizes[1] = dids_get16(parameters[1]), count = 2;
        if (sizes[0] > DIDS_TPM_ECC_PARAMETER_MAX || sizes[1] > DIDS_TPM_ECC_PARAMETER_MAX)
            return dids_tpm_fail(failure, DIDS_TPM_STAGE_SHAPE, 0, 0);
    } else if (s->sigAlg == DIDS_TPM2_ALG_RSASSA) {
        parameters[0] = p + DIDS_TPMT_SIGNATURE_RSA_SIG, sizes[0] = dids_get16(parameters[0]), count = 1;
        if (sizes[0] > DIDS_TPM_RSA_KEY_BYTES_MAX) return dids_tpm_fail(failure, DIDS_TPM_STAGE_SHAPE, 0, 0);
    } else {
        return dids_tpm_fail(failure, DIDS_TPM_STAGE_SHAPE, 0, 0);
    }
    unsigned char m[4 + 2 + DIDS_TPM_RSA_KEY_BYTES_MAX];
    size_t n = 0;
    uint16_t fields[] = {s->sigAlg, dids_get16(p + DIDS_TPMT_SIGNATURE_HASH)};
    for (int i = 0; i < 2; i++) { m[n++] = (unsigned char)(fields[i] >> 8); m[n++] = (unsigned char)fields[i]; }
    for (int i = 0; i < count; i++) {
        m[n++] = (unsigned char)(sizes[i] >> 8);
        m[n++] = (unsigned char)sizes[i];
        memcpy(m + n, parameters[i] + 2, sizes[i]);
        n += sizes[i];
    }
    return dids_tpm_put(out, m, n, DIDS_TPM_STAGE_SHAPE, failure);
}

int dids_tpm_attests_certify(const unsigned char *attest, size_t size, const TPM2B_DATA *nonce, const TPM2B_NAME *name) {
    // magic (4), type (2), qualifiedSigner, extraData, clockInfo (17), firmwareVersion (8), then
    // TPMS_CERTIFY_INFO: name, qualifiedName; the TPM2Bs with 16-bit sizes, all big-endian.
    size_t at = 6;
    if (size < at || dids_tcti_be32(attest) != DIDS_TPM2_GENERATED_VALUE
        || (attest[4] << 8 | attest[5]) != DIDS_TPM2_ST_ATTEST_CERTIFY)
        return 0;
    const unsigned char *extra = NULL, *certified = NULL;
    for (int field = 0; field < 4; field++) {
        if (field == 2) at += 17 + 8;
        if (size < at + 2) return 0;
        size_t n = (size_t)(attest[at] << 8 | attest[at + 1]);
        if (size < at + 2 + n) return 0;
        if (field == 1) extra = attest + at;
        if (field == 2) certified = attest + at;
        at += 2 + n;
    }
    return at == size && (size_t)(extra[0] << 8 | extra[1]) == nonce->size
        && memcmp(extra + 2, nonce->buffer, nonce->size) == 0
        && (size_t)(certified[0] << 8 | certified[1]) == name->size && memcmp(certified + 2, name->name, name->size) == 0;
}

int dids_tpm_certify(dids_tpm *tpm, const unsigned char ak_unique[32], enum dids_tpm_key kind,
                     const unsigned char unique[32],
                     const unsigned char *nonce, size_t nonce_size, struct dids_tpm_bytes *attest,
                     struct dids_tpm_bytes *signature, struct dids_tpm_bytes *app_public,
                     struct dids_tpm_bytes *app_name, struct dids_tpm_bytes *ak_public,
                     struct dids_tpm_failure *failure) {
    TPM2B_DATA qualifying;
    if ((kind != DIDS_TPM_APP_KEY && kind != DIDS_TPM_CREDENTIAL_KEY) || nonce_size > sizeof qualifying.buffer)
        return dids_tpm_fail(failure, DIDS_TPM_STAGE_CERTIFY, 0, EINVAL);
    qualifying.size = (uint16_t)nonce_size;
    if (nonce_size) memcpy(qualifying.buffer, nonce, nonce_size);
    const TPMT_SIG_SCHEME scheme = {.scheme = DIDS_TPM2_ALG_ECDSA, .hashAlg = DIDS_TPM2_ALG_SHA256};
    ESYS_TR ak = DIDS_ESYS_TR_NONE, key = DIDS_ESYS_TR_NONE;
    TPM2B_ATTEST *certified = NULL;
    TPMT_SIGNATURE *signed_by = NULL;
    TPM2B_NAME *name = NULL;
    ESYS_TR session = DIDS_ESYS_TR_NONE;
    // The certified key's authorisation is the salted session's (the answer HMACed, the nonce and
    // TPMS_ATTEST encrypted on the way); the AK's a password: a session is used once per command.
    int ok = dids_tpm_create_primary(tpm, DIDS_TPM_ATTESTATION_KEY, ak_unique, &ak, ak_public, failure)
          && dids_tpm_create_primary(tpm, kind, unique, &key, app_public, failure)
          && dids_tpm_name(tpm, key, &name, failure)
          && (session = dids_tpm_salted(tpm, DIDS_TPMA_SESSION_DECRYPT | DIDS_TPMA_SESSION_ENCRYPT, failure))
                 != DIDS_ESYS_TR_NONE
          && (DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_CERTIFY,
                           dids_p_Esys_Certify_Async(tpm->esys, key, ak, session, DIDS_ESYS_TR_PASSWORD,
                                                     DIDS_ESYS_TR_NONE, &qualifying, &scheme),
                           dids_p_Esys_Certify_Finish(tpm->esys, &certified, &signed_by))
              || dids_tpm_refused_salted(tpm, DIDS_ESYS_TR_NONE, failure))
          && (dids_tpm_attests_certify(certified->attestationData, certified->size, &qualifying, name)
              || dids_tpm_fail(failure, DIDS_TPM_STAGE_CERTIFY, 0, EPROTO))
          && dids_tpm_put(attest, certified->attestationData, certified->size, DIDS_TPM_STAGE_CERTIFY, failure)
          && dids_tpm_put(app_name, name->name, name->size, DIDS_TPM_STAGE_NAME, failure)
          && dids_tpm_marshal_signature(signed_by, signature, failure);
    dids_p_Esys_Free(name);
    dids_p_Esys_Free(certified);
    dids_p_Esys_Free(signed_by);
    dids_tpm_flush(tpm, &key);
    dids_tpm_flush(tpm, &ak);
    return ok;
}

int dids_tpm_sign(dids_tpm *tpm, enum dids_tpm_key kind, const unsigned char unique[32], const unsigned char digest[32],
                  struct dids_tpm_bytes *signature, struct dids_tpm_bytes *public_area,
                  struct dids_tpm_failure *failure) {
    if (kind != DIDS_TPM_CREDENTIAL_KEY && kind != DIDS_TPM_APP_KEY)
        return dids_tpm_fail(failure, DIDS_TPM_STAGE_SIGN, 0, EINVAL);
    TPM2B_DIGEST message = {.size = 32};
    memcpy(message.buffer, digest, 32);
    const TPMT_SIG_SCHEME scheme = {.scheme = DIDS_TPM2_ALG_ECDSA, .hashAlg = DIDS_TPM2_ALG_SHA256};
    // An unrestricted key signs any digest: the ticket that a restricted key would need is null.
    const TPMT_TK_HASHCHECK no_ticket = {.tag = DIDS_TPM2_ST_HASHCHECK, .hierarchy = DIDS_TPM2_RH_NULL};
    ESYS_TR key = DIDS_ESYS_TR_NONE;
    TPMT_SIGNATURE *signed_by = NULL;
    ESYS_TR session = DIDS_ESYS_TR_NONE;
    // Under the salted session: the digest encrypted on the way, the signature HMACed (a
    // TPMT_SIGNATURE is no sized buffer, so the answer cannot be encrypted).
    int ok = dids_tpm_create_primary(tpm, kind, unique, &key, public_area, failure)
          && (session = dids_tpm_salted(tpm, DIDS_TPMA_SESSION_DECRYPT, failure)) != DIDS_ESYS_TR_NONE
          && (DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_SIGN,
                           dids_p_Esys_Sign_Async(tpm->esys, key, session, DIDS_ESYS_TR_NONE,
                                                  DIDS_ESYS_TR_NONE, &message, &scheme, &no_ticket),
                           dids_p_Esys_Sign_Finish(tpm->esys, &signed_by))
              || dids_tpm_refused_salted(tpm, DIDS_ESYS_TR_NONE, failure))
          && dids_tpm_marshal_signature(signed_by, signature, failure);
    dids_p_Esys_Free(signed_by);
    dids_tpm_flush(tpm, &key);
    return ok;
}
