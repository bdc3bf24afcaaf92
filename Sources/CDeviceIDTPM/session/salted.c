// Each conversation's salted session (docs/HARDWARE-ID.md, "Salted sessions"): one HMAC session,
// AES-128-CFB, SHA-256, salted to the owner hierarchy's ECC P-256 storage primary (the TCG's SRK
// template), started at the first command that needs it and flushed at the end. The commands that
// decide the ID and the evidence (every CreatePrimary, Certify, Sign, ActivateCredential) are
// authorised with it: the TPM refuses a command changed on its way (its HMAC no longer matches)
// and ESAPI an answer changed on its way (TSS2_ESYS_RC_RSP_AUTH_FAILED), since only DeviceID and
// the TPM know the salt.
#include "session.h"

#include <errno.h>
#include <string.h>

// The TCG's ECC P-256 storage primary ("TCG TPM v2.0 Provisioning Guidance", the SRK template):
// restricted decryption, AES-128-CFB, unique two zero coordinates.
static void salt_key_template(TPM2B_PUBLIC *public) {
    memset(public, 0, sizeof *public);
    public->size = DIDS_TPMT_PUBLIC_SIZE;
    unsigned char *t = public->publicArea;
    dids_put16(t + DIDS_TPMT_PUBLIC_TYPE, DIDS_TPM2_ALG_ECC);
    dids_put16(t + DIDS_TPMT_PUBLIC_NAME_ALG, DIDS_TPM2_ALG_SHA256);
    dids_put32(t + DIDS_TPMT_PUBLIC_ATTRIBUTES, DIDS_TPM_SALT_KEY_ATTRIBUTES);
    dids_put16(t + DIDS_TPMT_PUBLIC_SYMMETRIC, DIDS_TPM2_ALG_AES);
    dids_put16(t + DIDS_TPMT_PUBLIC_SYMMETRIC + 2, 128);
    dids_put16(t + DIDS_TPMT_PUBLIC_SYMMETRIC + 4, DIDS_TPM2_ALG_CFB);
    dids_put16(t + DIDS_TPMT_PUBLIC_SCHEME, DIDS_TPM2_ALG_NULL);
    dids_put16(t + DIDS_TPMT_PUBLIC_CURVE, DIDS_TPM2_ECC_NIST_P256);
    dids_put16(t + DIDS_TPMT_PUBLIC_KDF, DIDS_TPM2_ALG_NULL);
    dids_put16(t + DIDS_TPMT_PUBLIC_UNIQUE_X, 32);
    dids_put16(t + DIDS_TPMT_PUBLIC_UNIQUE_Y, 32);
}

ESYS_TR dids_tpm_salted(dids_tpm *tpm, uint8_t attributes, struct dids_tpm_failure *failure) {
#ifdef DIDS_FUZZ_TPM
    if (dids_tcti_fuzz_unsalted()) return DIDS_ESYS_TR_PASSWORD;  // answers nothing checks (transports/tcti.h)
#endif
    if (tpm->salted == DIDS_ESYS_TR_NONE) {
        TPM2B_PUBLIC template;
        salt_key_template(&template);
        ESYS_TR key = DIDS_ESYS_TR_NONE, session = DIDS_ESYS_TR_NONE;
        const TPMT_SYM_DEF aes = {.algorithm = DIDS_TPM2_ALG_AES, .keyBits = 128, .mode = DIDS_TPM2_ALG_CFB};
        // The key is made under a password session (nothing to salt to yet) and checked against
        // the template like every other; flushed once the session holds the salt it encrypted.
        int ok = dids_tpm_create_primary_with(tpm, DIDS_ESYS_TR_RH_OWNER, DIDS_ESYS_TR_PASSWORD, &template,
                                              DIDS_TPM_STAGE_CREATE, &key, NULL, failure)
              && DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_SESSION,
                              dids_p_Esys_StartAuthSession_Async(tpm->esys, key, DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE,
                                                                 DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE, NULL,
                                                                 DIDS_TPM2_SE_HMAC, &aes, DIDS_TPM2_ALG_SHA256),
                              dids_p_Esys_StartAuthSession_Finish(tpm->esys, &session));
        dids_tpm_flush(tpm, &key);
        if (!ok) return DIDS_ESYS_TR_NONE;
        tpm->salted = session;
    }
    dids_computing_begin();
    TSS2_RC rc = dids_p_Esys_TRSess_SetAttributes(tpm->esys, tpm->salted, (uint8_t)(DIDS_TPMA_SESSION_CONTINUE | attributes), 0xff);
    dids_computing_end();
    if (rc != 0) { dids_tpm_fail(failure, DIDS_TPM_STAGE_SESSION, rc, 0); return DIDS_ESYS_TR_NONE; }
    return tpm->salted;
}

int dids_tpm_refused_salted(dids_tpm *tpm, ESYS_TR hierarchy, struct dids_tpm_failure *failure) {
    uint32_t code = dids_tpm_rc_code(failure->rc);
    if (failure->error_number != 0 || (code != DIDS_TPM2_RC_BAD_AUTH && code != DIDS_TPM2_RC_AUTH_FAIL)) return 0;
    // The session's HMAC is keyed by the salt and the entity's password. DeviceID's own objects
    // have none; a hierarchy has one only where TPM_PT_PERMANENT says so (then PERMISSION, as
    // under a password session). Otherwise the command the TPM checked was not the one sent.
    uint32_t permanent = 0;
    struct dids_tpm_failure ignored;
    uint32_t set = hierarchy == DIDS_ESYS_TR_RH_OWNER ? 1u : hierarchy == DIDS_ESYS_TR_RH_ENDORSEMENT ? 2u : 0u;
    if (set && (!dids_tpm_properties(tpm, DIDS_TPM2_PT_PERMANENT, 1, &permanent, &ignored) || (permanent & set)))
        return 0;
    failure->error_number = EPROTO;
    return 0;
}
