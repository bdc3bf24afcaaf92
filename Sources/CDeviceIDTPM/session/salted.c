// Each conversation's salted session (docs/HARDWARE-ID.md, "Salted sessions"): one HMAC session,
// AES-128-CFB, SHA-256, salted to the owner hierarchy's ECC P-256 storage primary (the TCG's SRK
// template), started at the first command that needs it and flushed at the end. The commands that
// decide the ID and the evidence (every CreatePrimary, Certify, Sign, ActivateCredential) and
// those that read or change what the TPM keeps (the NV commands of counters and EK certificates)
// are authorised with it, and the questions (GetCapability, ReadPublic, NV_ReadPublic) audited by
// it: the TPM refuses a command changed on its way (its HMAC no longer matches) and ESAPI an
// answer changed on its way (TSS2_ESYS_RC_RSP_AUTH_FAILED), since only DeviceID and the TPM know
// the salt.
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

// The SRK at DIDS_TPM_SRK_PERSISTENT, when the TPM keeps one of `template` there (systemd's
// tpm2-setup and tpm2-tools' conventions put it there): `*key` its ESAPI handle, to forget, not
// flush; NONE when there is none, or another key (then the primary is made, as without one).
// These questions go without a session: there is none to salt yet. Whoever answers as the TPM
// could offer a key of its own here as it could answer the CreatePrimary with one.
static int persistent_srk(dids_tpm *tpm, const TPM2B_PUBLIC *template, ESYS_TR *key, struct dids_tpm_failure *failure) {
    *key = DIDS_ESYS_TR_NONE;
    TPMS_CAPABILITY_DATA *data = NULL;
    TPMI_YES_NO more = 0;
    if (!DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_CREATE,
                      dids_p_Esys_GetCapability_Async(tpm->esys, DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE,
                                                      DIDS_TPM2_CAP_HANDLES, DIDS_TPM_SRK_PERSISTENT, 1),
                      dids_p_Esys_GetCapability_Finish(tpm->esys, &more, &data)))
        return 0;
    const unsigned char *p = (const unsigned char *)data;
    int held = data->capability == DIDS_TPM2_CAP_HANDLES && dids_get32(p + DIDS_TPMS_CAPABILITY_HANDLES_COUNT) >= 1
            && dids_get32(p + DIDS_TPMS_CAPABILITY_HANDLES) == DIDS_TPM_SRK_PERSISTENT;
    dids_p_Esys_Free(data);
    if (!held) return 1;
    TPM2B_PUBLIC *public = NULL;
    int ok = DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_CREATE,
                          dids_p_Esys_TR_FromTPMPublic_Async(tpm->esys, DIDS_TPM_SRK_PERSISTENT, DIDS_ESYS_TR_NONE,
                                                             DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE),
                          dids_p_Esys_TR_FromTPMPublic_Finish(tpm->esys, key))
          && DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_CREATE,
                          dids_p_Esys_ReadPublic_Async(tpm->esys, *key, DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE,
                                                       DIDS_ESYS_TR_NONE),
                          dids_p_Esys_ReadPublic_Finish(tpm->esys, &public, NULL, NULL));
    if (ok && !dids_tpm_as_asked(template->publicArea, public->publicArea)) dids_tpm_forget(tpm, key);
    dids_p_Esys_Free(public);
    if (!ok) dids_tpm_forget(tpm, key);
    return ok;
}

void dids_tpm_pin(dids_tpm *tpm, const unsigned char *name, size_t size) {
    tpm->pin_size = size <= sizeof tpm->pin ? size : 0;
    if (tpm->pin_size) memcpy(tpm->pin, name, tpm->pin_size);
}

size_t dids_tpm_salt_name(const dids_tpm *tpm, unsigned char out[68]) {
    memcpy(out, tpm->salt_name, tpm->salt_name_size);
    return tpm->salt_name_size;
}

// Whether `key` is the pinned one (any, when none is pinned): 1, and its Name kept as the one
// salted to; 0 when it is another; -1 with `failure` set when its Name cannot be had.
static int as_pinned(dids_tpm *tpm, ESYS_TR key, struct dids_tpm_failure *failure) {
    TPM2B_NAME *name = NULL;
    if (!dids_tpm_name(tpm, key, &name, failure)) return -1;
    int same = tpm->pin_size == 0 || (name->size == tpm->pin_size && memcmp(name->name, tpm->pin, name->size) == 0);
    if (same) memcpy(tpm->salt_name, name->name, tpm->salt_name_size = name->size);
    dids_p_Esys_Free(name);
    return same;
}

ESYS_TR dids_tpm_salted(dids_tpm *tpm, uint8_t attributes, struct dids_tpm_failure *failure) {
#ifdef DIDS_FUZZ_TPM
    // Answers nothing checks (transports/tcti.h). A question (GetCapability, ReadPublic,
    // NV_ReadPublic) takes no password session, so audited ones stay salted.
    if (dids_tcti_fuzz_unsalted() && !(attributes & DIDS_TPMA_SESSION_AUDIT)) return DIDS_ESYS_TR_PASSWORD;
#endif
    if (tpm->salted == DIDS_ESYS_TR_NONE) {
        TPM2B_PUBLIC template;
        salt_key_template(&template);
        ESYS_TR key = DIDS_ESYS_TR_NONE, session = DIDS_ESYS_TR_NONE;
        const TPMT_SYM_DEF aes = {.algorithm = DIDS_TPM2_ALG_AES, .keyBits = 128, .mode = DIDS_TPM2_ALG_CFB};
        // A persistent SRK of the template, else the key made under a password session (nothing
        // to salt to yet) and checked against the template like every other; a made one is
        // flushed once the session holds the salt it encrypted. With a pin, the key must be the
        // pinned one: a persistent SRK of another Name is passed over (the pin may be of the
        // primary, made before the SRK was), and a primary of another Name ends the conversation
        // before anything is sent under a session salted to it.
        int kept = 0, pinned = 1;
        int ok = persistent_srk(tpm, &template, &key, failure);
        if (ok && key != DIDS_ESYS_TR_NONE) {
            int found = as_pinned(tpm, key, failure);
            ok = found >= 0;
            if (!(kept = found > 0)) dids_tpm_forget(tpm, &key);
        }
        if (ok && !kept) {
            ok = dids_tpm_create_primary_with(tpm, DIDS_ESYS_TR_RH_OWNER, DIDS_ESYS_TR_PASSWORD, &template,
                                              DIDS_TPM_STAGE_CREATE, &key, NULL, failure)
              && (pinned = as_pinned(tpm, key, failure)) > 0;
            if (!pinned) dids_tpm_fail(failure, DIDS_TPM_STAGE_PIN, 0, EPROTO);
        }
        ok = ok && DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_SESSION,
                                dids_p_Esys_StartAuthSession_Async(tpm->esys, key, DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE,
                                                                   DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE, NULL,
                                                                   DIDS_TPM2_SE_HMAC, &aes, DIDS_TPM2_ALG_SHA256),
                                dids_p_Esys_StartAuthSession_Finish(tpm->esys, &session));
        if (kept) dids_tpm_forget(tpm, &key);
        else dids_tpm_flush(tpm, &key);
        if (!ok) {
            tpm->salt_name_size = 0;
            return DIDS_ESYS_TR_NONE;
        }
        tpm->salted = session;
    }
    dids_computing_begin();
    TSS2_RC rc = dids_p_Esys_TRSess_SetAttributes(tpm->esys, tpm->salted, (uint8_t)(DIDS_TPMA_SESSION_CONTINUE | attributes), 0xff);
    dids_computing_end();
    if (rc != 0) { dids_tpm_fail(failure, DIDS_TPM_STAGE_SESSION, rc, 0); return DIDS_ESYS_TR_NONE; }
    return tpm->salted;
}

ESYS_TR dids_tpm_audited(dids_tpm *tpm, struct dids_tpm_failure *failure) {
    return dids_tpm_salted(tpm, DIDS_TPMA_SESSION_AUDIT, failure);
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
