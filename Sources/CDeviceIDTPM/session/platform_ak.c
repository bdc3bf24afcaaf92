// Platform attestation keys (docs/HARDWARE-ID.md, "Platform attestation keys"): the AK a cloud's
// virtual TPM keeps, persistent (Azure) or made from a template in NV (GCE), with its certificate
// in NV, which certifies the app's AK where the TPM holds no EK certificate. A persistent key is
// the TPM's, never flushed (only ESAPI's handle is closed); one made from its template is flushed.
#include "session.h"

#include <errno.h>
#include <string.h>

static const struct { uint32_t handle, certificate, template; } platform_aks[DIDS_TPM_PLATFORM_AKS] = {
    [DIDS_TPM_PLATFORM_AK_AZURE] = {0x81000003u, 0x01c101d0u, 0},
    [DIDS_TPM_PLATFORM_AK_GCE_RSA] = {0, 0x01c10000u, 0x01c10001u},
    [DIDS_TPM_PLATFORM_AK_GCE_ECC] = {0, 0x01c10002u, 0x01c10003u},
};

static int known(enum dids_tpm_platform_ak ak) { return (unsigned)ak < DIDS_TPM_PLATFORM_AKS; }

uint32_t dids_tpm_platform_ak_handle(enum dids_tpm_platform_ak ak) { return known(ak) ? platform_aks[ak].handle : 0; }

uint32_t dids_tpm_platform_ak_certificate_index(enum dids_tpm_platform_ak ak) {
    return known(ak) ? platform_aks[ak].certificate : 0;
}

uint32_t dids_tpm_platform_ak_template_index(enum dids_tpm_platform_ak ak) {
    return known(ak) ? platform_aks[ak].template : 0;
}

// Asked by GetCapability first: looking up an absent handle makes tpm2-tss log an error.
static int holds(dids_tpm *tpm, uint32_t handle, int *held, struct dids_tpm_failure *failure) {
    uint32_t set = 0;
    if (!dids_tpm_handles_present(tpm, handle, 1, DIDS_TPM_STAGE_PLATFORM_AK, &set, failure)) return 0;
    *held = set & 1u;
    return 1;
}

int dids_tpm_platform_ak_certificate(dids_tpm *tpm, enum dids_tpm_platform_ak ak, struct dids_tpm_bytes *certificate,
                                     struct dids_tpm_failure *failure) {
    if (!known(ak)) return dids_tpm_fail(failure, DIDS_TPM_STAGE_PLATFORM_AK, 0, EINVAL);
    int key = 0, index = 0;
    certificate->size = 0;
    uint32_t made_of = platform_aks[ak].handle ? platform_aks[ak].handle : platform_aks[ak].template;
    if (!holds(tpm, made_of, &key, failure)) return 0;
    if (!key) return 1;
    if (!holds(tpm, platform_aks[ak].certificate, &index, failure)) return 0;
    return index ? dids_tpm_nv_read(tpm, platform_aks[ak].certificate, DIDS_TPM_STAGE_PLATFORM_AK, certificate, failure)
                 : 1;
}

// The platform AK made in the endorsement hierarchy (its auth empty, as every EK's) from the
// TPMT_PUBLIC in NV index `index`; flushed by the caller.
static int create_from_template(dids_tpm *tpm, uint32_t index, ESYS_TR *handle, struct dids_tpm_failure *failure) {
    TPM2B_PUBLIC template;
    return dids_tpm_nv_template(tpm, index, DIDS_TPM_STAGE_PLATFORM_AK, &template, failure)
        && dids_tpm_create_primary_from(tpm, DIDS_ESYS_TR_RH_ENDORSEMENT, &template, DIDS_TPM_STAGE_PLATFORM_AK, handle,
                                        NULL, failure);
}

// The platform AK's ESAPI handle: the persistent key's, or one made from its template.
static int platform_key(dids_tpm *tpm, enum dids_tpm_platform_ak ak, ESYS_TR *handle,
                        struct dids_tpm_failure *failure) {
    if (!platform_aks[ak].handle) return create_from_template(tpm, platform_aks[ak].template, handle, failure);
    ESYS_TR session = dids_tpm_audited(tpm, failure);
    return session != DIDS_ESYS_TR_NONE
        && DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_PLATFORM_AK,
                        dids_p_Esys_TR_FromTPMPublic_Async(tpm->esys, platform_aks[ak].handle, session,
                                                           DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE),
                        dids_p_Esys_TR_FromTPMPublic_Finish(tpm->esys, handle));
}

int dids_tpm_platform_certify(dids_tpm *tpm, enum dids_tpm_platform_ak ak, const unsigned char ak_unique[32],
                              const unsigned char *nonce, size_t nonce_size, struct dids_tpm_bytes *attest,
                              struct dids_tpm_bytes *signature, struct dids_tpm_failure *failure) {
    TPM2B_DATA qualifying;
    if (!known(ak) || nonce_size > sizeof qualifying.buffer)
        return dids_tpm_fail(failure, DIDS_TPM_STAGE_PLATFORM_AK, 0, EINVAL);
    qualifying.size = (uint16_t)nonce_size;
    if (nonce_size) memcpy(qualifying.buffer, nonce, nonce_size);
    // A restricted signing key signs in its own scheme: the caller's must be NULL.
    const TPMT_SIG_SCHEME own_scheme = {.scheme = DIDS_TPM2_ALG_NULL};
    ESYS_TR platform = DIDS_ESYS_TR_NONE, key = DIDS_ESYS_TR_NONE;
    TPM2B_ATTEST *certified = NULL;
    TPMT_SIGNATURE *signed_by = NULL;
    TPM2B_NAME *name = NULL;
    int ok = platform_key(tpm, ak, &platform, failure)
          && dids_tpm_create_primary(tpm, DIDS_TPM_ATTESTATION_KEY, ak_unique, &key, NULL, failure)
          && dids_tpm_name(tpm, key, &name, failure)
          && DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_PLATFORM_AK,
                          dids_p_Esys_Certify_Async(tpm->esys, key, platform, DIDS_ESYS_TR_PASSWORD,
                                                    DIDS_ESYS_TR_PASSWORD, DIDS_ESYS_TR_NONE, &qualifying, &own_scheme),
                          dids_p_Esys_Certify_Finish(tpm->esys, &certified, &signed_by))
          && (dids_tpm_attests_certify(certified->attestationData, certified->size, &qualifying, name)
              || dids_tpm_fail(failure, DIDS_TPM_STAGE_PLATFORM_AK, 0, EPROTO))
          && dids_tpm_put(attest, certified->attestationData, certified->size, DIDS_TPM_STAGE_PLATFORM_AK, failure)
          && dids_tpm_marshal_signature(signed_by, signature, failure);
    dids_p_Esys_Free(name);
    dids_p_Esys_Free(certified);
    dids_p_Esys_Free(signed_by);
    dids_tpm_flush(tpm, &key);
    if (platform_aks[ak].handle) dids_tpm_forget(tpm, &platform);
    else dids_tpm_flush(tpm, &platform);
    return ok;
}
