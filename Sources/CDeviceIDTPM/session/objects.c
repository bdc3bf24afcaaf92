// The primaries DeviceID asks the TPM for, and the marshalled form of their public areas. The
// templates are frozen (docs/HARDWARE-ID.md): a change in any field changes every ID or credential.
#include "session.h"

#include <errno.h>
#include <string.h>


// An ECC P-256 key with no policy and the given unique.x (a signing key, or the binding key once
// its scheme is set to ECDH); its scheme ECDSA/SHA-256, or
// NULL (any scheme the signing command names).
static void ecc_signing_template(TPM2B_PUBLIC *public, uint32_t attributes, int ecdsa, const unsigned char unique[32]) {
    unsigned char *t = public->publicArea;
    dids_put16(t + DIDS_TPMT_PUBLIC_TYPE, DIDS_TPM2_ALG_ECC);
    dids_put32(t + DIDS_TPMT_PUBLIC_ATTRIBUTES, attributes);
    dids_put16(t + DIDS_TPMT_PUBLIC_SYMMETRIC, DIDS_TPM2_ALG_NULL);
    dids_put16(t + DIDS_TPMT_PUBLIC_SCHEME, ecdsa ? DIDS_TPM2_ALG_ECDSA : DIDS_TPM2_ALG_NULL);
    if (ecdsa) dids_put16(t + DIDS_TPMT_PUBLIC_SCHEME + 2, DIDS_TPM2_ALG_SHA256);
    dids_put16(t + DIDS_TPMT_PUBLIC_CURVE, DIDS_TPM2_ECC_NIST_P256);
    dids_put16(t + DIDS_TPMT_PUBLIC_KDF, DIDS_TPM2_ALG_NULL);
    dids_put16(t + DIDS_TPMT_PUBLIC_UNIQUE_X, 32);
    memcpy(t + DIDS_TPMT_PUBLIC_UNIQUE_X + 2, unique, 32);
}

// The TPM's big-endian marshalling of an ECC TPMT_PUBLIC of the shapes DeviceID makes: symmetric
// and kdf NULL, scheme ECDSA (with its hash) or NULL (nothing follows). Anything else is refused
// (stage SHAPE).
static int marshal_ecc_public(const unsigned char *t, struct dids_tpm_bytes *out, struct dids_tpm_failure *failure) {
    unsigned char m[2 + 2 + 4 + 2 + 64 + 2 + 2 + 2 + 2 + 2 + 2 + 2 * (2 + DIDS_TPM_ECC_PARAMETER_MAX)];
    size_t n = 0;
#define BE16(v) do { uint16_t v_ = (v); m[n++] = (unsigned char)(v_ >> 8); m[n++] = (unsigned char)v_; } while (0)
#define BYTES(p, len) do { memcpy(m + n, (p), (len)); n += (len); } while (0)
    uint16_t policy = dids_get16(t + DIDS_TPMT_PUBLIC_AUTH_POLICY);
    uint16_t x = dids_get16(t + DIDS_TPMT_PUBLIC_UNIQUE_X), y = dids_get16(t + DIDS_TPMT_PUBLIC_UNIQUE_Y);
    uint16_t scheme = dids_get16(t + DIDS_TPMT_PUBLIC_SCHEME);
    if (dids_get16(t + DIDS_TPMT_PUBLIC_TYPE) != DIDS_TPM2_ALG_ECC || policy > 64
        || dids_get16(t + DIDS_TPMT_PUBLIC_SYMMETRIC) != DIDS_TPM2_ALG_NULL
        || (scheme != DIDS_TPM2_ALG_ECDSA && scheme != DIDS_TPM2_ALG_ECDH && scheme != DIDS_TPM2_ALG_NULL)
        || dids_get16(t + DIDS_TPMT_PUBLIC_KDF) != DIDS_TPM2_ALG_NULL || x > DIDS_TPM_ECC_PARAMETER_MAX
        || y > DIDS_TPM_ECC_PARAMETER_MAX)
        return dids_tpm_fail(failure, DIDS_TPM_STAGE_SHAPE, 0, 0);
    uint32_t attributes = dids_get32(t + DIDS_TPMT_PUBLIC_ATTRIBUTES);
    BE16(DIDS_TPM2_ALG_ECC);
    BE16(dids_get16(t + DIDS_TPMT_PUBLIC_NAME_ALG));
    BE16(attributes >> 16);
    BE16(attributes & 0xffffu);
    BE16(policy);
    BYTES(t + DIDS_TPMT_PUBLIC_AUTH_POLICY + 2, policy);
    BE16(DIDS_TPM2_ALG_NULL);                                   // symmetric
    BE16(scheme);
    if (scheme != DIDS_TPM2_ALG_NULL) BE16(dids_get16(t + DIDS_TPMT_PUBLIC_SCHEME + 2));  // its hash
    BE16(dids_get16(t + DIDS_TPMT_PUBLIC_CURVE));
    BE16(DIDS_TPM2_ALG_NULL);                                   // kdf
    BE16(x);
    BYTES(t + DIDS_TPMT_PUBLIC_UNIQUE_X + 2, x);
    BE16(y);
    BYTES(t + DIDS_TPMT_PUBLIC_UNIQUE_Y + 2, y);
#undef BE16
#undef BYTES
    return dids_tpm_put(out, m, n, DIDS_TPM_STAGE_SHAPE, failure);
}

int dids_tpm_create_primary(dids_tpm *tpm, enum dids_tpm_key key, const unsigned char unique[32], ESYS_TR *handle,
                            struct dids_tpm_bytes *public_area, struct dids_tpm_failure *failure) {
    return dids_tpm_create_primary_policy(tpm, key, unique, NULL, handle, public_area, failure);
}

int dids_tpm_create_primary_policy(dids_tpm *tpm, enum dids_tpm_key key, const unsigned char unique[32],
                                   const unsigned char *policy, ESYS_TR *handle, struct dids_tpm_bytes *public_area,
                                   struct dids_tpm_failure *failure) {
    TPM2B_PUBLIC template;
    memset(&template, 0, sizeof template);
    template.size = DIDS_TPMT_PUBLIC_SIZE;
    dids_put16(template.publicArea + DIDS_TPMT_PUBLIC_NAME_ALG, DIDS_TPM2_ALG_SHA256);
    switch (key) {
    case DIDS_TPM_APP_KEY:
        ecc_signing_template(&template, DIDS_TPM_APP_KEY_ATTRIBUTES, 1, unique);
        break;
    case DIDS_TPM_CREDENTIAL_KEY:
        ecc_signing_template(&template, DIDS_TPM_APP_KEY_ATTRIBUTES, 0, unique);
        break;
    case DIDS_TPM_BINDING_KEY:
        // A decryption key for ECDH only: scheme ECDH (ZGen takes ECDH or NULL), no symmetric
        // algorithm (it is not a parent), no policy, no password.
        ecc_signing_template(&template, DIDS_TPM_BINDING_KEY_ATTRIBUTES, 0, unique);
        dids_put16(template.publicArea + DIDS_TPMT_PUBLIC_SCHEME, DIDS_TPM2_ALG_ECDH);
        dids_put16(template.publicArea + DIDS_TPMT_PUBLIC_SCHEME + 2, DIDS_TPM2_ALG_SHA256);
        break;
    case DIDS_TPM_ATTESTATION_KEY:
        // The owner hierarchy, not the endorsement one: TPM2_Certify by a key outside the
        // endorsement and platform hierarchies has its resetCount, restartCount and
        // firmwareVersion obfuscated, so they cannot link one device's apps.
        ecc_signing_template(&template, DIDS_TPM_AK_ATTRIBUTES, 1, unique);
        break;
    }
    if (policy) {
        // this-device-only+pcr7's binding key: the authPolicy, and no userWithAuth, so that the
        // empty password does not stand in for the policy.
        dids_put32(template.publicArea + DIDS_TPMT_PUBLIC_ATTRIBUTES, DIDS_TPM_BINDING_KEY_PCR7_ATTRIBUTES);
        dids_put16(template.publicArea + DIDS_TPMT_PUBLIC_AUTH_POLICY, 32);
        memcpy(template.publicArea + DIDS_TPMT_PUBLIC_AUTH_POLICY + 2, policy, 32);
    }
    TPM2B_PUBLIC *out = NULL;
    if (!dids_tpm_create_primary_from(tpm, DIDS_ESYS_TR_RH_OWNER, &template, DIDS_TPM_STAGE_CREATE, handle, &out, failure))
        return 0;
    int ok = !public_area || marshal_ecc_public(out->publicArea, public_area, failure);
    dids_p_Esys_Free(out);
    return ok;
}

// The coordinate size of an ECC curve DeviceID asks for, or 0.
static uint16_t coordinate_size(uint16_t curve) {
    switch (curve) {
    case DIDS_TPM2_ECC_NIST_P256: return 32;
    case DIDS_TPM2_ECC_NIST_P384: return 48;
    case DIDS_TPM2_ECC_NIST_P521: return 66;
    default: return 0;
    }
}

// Whether a public area the TPM answered (`got`) is a key of the template sent (`asked`): the
// same type, nameAlg, attributes, authPolicy, symmetric definition, scheme, curve and KDF or key
// size and exponent, and a unique of the size that key has. ESAPI checks only that the Name
// matches the public area it came with; whoever answers as the TPM would otherwise choose the key
// (another app's, the AK, a SHA-384 Name) and with it the ID. Only unique.x's contents are the
// TPM's to choose: the key itself.
int dids_tpm_as_asked(const unsigned char *asked, const unsigned char *got) {
    uint16_t type = dids_get16(asked + DIDS_TPMT_PUBLIC_TYPE), policy = dids_get16(asked + DIDS_TPMT_PUBLIC_AUTH_POLICY);
    if (dids_get16(got + DIDS_TPMT_PUBLIC_TYPE) != type
        || dids_get16(got + DIDS_TPMT_PUBLIC_NAME_ALG) != dids_get16(asked + DIDS_TPMT_PUBLIC_NAME_ALG)
        || dids_get32(got + DIDS_TPMT_PUBLIC_ATTRIBUTES) != dids_get32(asked + DIDS_TPMT_PUBLIC_ATTRIBUTES)
        || policy > 64 || dids_get16(got + DIDS_TPMT_PUBLIC_AUTH_POLICY) != policy
        || memcmp(got + DIDS_TPMT_PUBLIC_AUTH_POLICY + 2, asked + DIDS_TPMT_PUBLIC_AUTH_POLICY + 2, policy) != 0)
        return 0;
    uint16_t symmetric = dids_get16(asked + DIDS_TPMT_PUBLIC_SYMMETRIC), scheme = dids_get16(asked + DIDS_TPMT_PUBLIC_SCHEME);
    if (dids_get16(got + DIDS_TPMT_PUBLIC_SYMMETRIC) != symmetric
        || (symmetric != DIDS_TPM2_ALG_NULL
            && (dids_get16(got + DIDS_TPMT_PUBLIC_SYMMETRIC + 2) != dids_get16(asked + DIDS_TPMT_PUBLIC_SYMMETRIC + 2)
                || dids_get16(got + DIDS_TPMT_PUBLIC_SYMMETRIC + 4) != dids_get16(asked + DIDS_TPMT_PUBLIC_SYMMETRIC + 4)))
        || dids_get16(got + DIDS_TPMT_PUBLIC_SCHEME) != scheme
        || (scheme != DIDS_TPM2_ALG_NULL
            && dids_get16(got + DIDS_TPMT_PUBLIC_SCHEME + 2) != dids_get16(asked + DIDS_TPMT_PUBLIC_SCHEME + 2))
        || dids_get16(got + DIDS_TPMT_PUBLIC_CURVE) != dids_get16(asked + DIDS_TPMT_PUBLIC_CURVE))
        return 0;
    uint16_t x = dids_get16(got + DIDS_TPMT_PUBLIC_UNIQUE_X);
    if (type == DIDS_TPM2_ALG_RSA) {
        // An exponent of 0 is the default, 65537, which a TPM may answer either way.
        uint32_t e = dids_get32(asked + DIDS_TPMT_PUBLIC_RSA_EXPONENT), f = dids_get32(got + DIDS_TPMT_PUBLIC_RSA_EXPONENT);
        return (e == f || (e | f) == 65537u) && x == dids_get16(asked + DIDS_TPMT_PUBLIC_CURVE) / 8;
    }
    uint16_t kdf = dids_get16(asked + DIDS_TPMT_PUBLIC_KDF), coordinate = coordinate_size(dids_get16(asked + DIDS_TPMT_PUBLIC_CURVE));
    return type == DIDS_TPM2_ALG_ECC && coordinate != 0 && dids_get16(got + DIDS_TPMT_PUBLIC_KDF) == kdf
        && (kdf == DIDS_TPM2_ALG_NULL || dids_get16(got + DIDS_TPMT_PUBLIC_KDF + 2) == dids_get16(asked + DIDS_TPMT_PUBLIC_KDF + 2))
        && x == coordinate && dids_get16(got + DIDS_TPMT_PUBLIC_UNIQUE_Y) == coordinate;
}

int dids_tpm_create_primary_from(dids_tpm *tpm, ESYS_TR hierarchy, const TPM2B_PUBLIC *template, int stage,
                                 ESYS_TR *handle, TPM2B_PUBLIC **public, struct dids_tpm_failure *failure) {
    *handle = DIDS_ESYS_TR_NONE;
    ESYS_TR session = dids_tpm_salted(tpm, DIDS_TPMA_SESSION_DECRYPT | DIDS_TPMA_SESSION_ENCRYPT, failure);
    return session != DIDS_ESYS_TR_NONE
        && (dids_tpm_create_primary_with(tpm, hierarchy, session, template, stage, handle, public, failure)
            || dids_tpm_refused_salted(tpm, hierarchy, failure));
}

int dids_tpm_create_primary_with(dids_tpm *tpm, ESYS_TR hierarchy, ESYS_TR session, const TPM2B_PUBLIC *template,
                                 int stage, ESYS_TR *handle, TPM2B_PUBLIC **public, struct dids_tpm_failure *failure) {
    TPM2B_SENSITIVE_CREATE sensitive;
    memset(&sensitive, 0, sizeof sensitive);
    TPML_PCR_SELECTION no_pcrs;
    memset(&no_pcrs, 0, sizeof no_pcrs);
    *handle = DIDS_ESYS_TR_NONE;
    TPM2B_PUBLIC *out = NULL;
    int ok = DIDS_TPM_RUN(tpm, failure, stage,
                          dids_p_Esys_CreatePrimary_Async(tpm->esys, hierarchy, session, DIDS_ESYS_TR_NONE,
                                                          DIDS_ESYS_TR_NONE, &sensitive, template, NULL, &no_pcrs),
                          dids_p_Esys_CreatePrimary_Finish(tpm->esys, handle, &out, NULL, NULL, NULL));
    if (ok && !dids_tpm_as_asked(template->publicArea, out->publicArea)) {
        dids_tpm_flush(tpm, handle);
        ok = dids_tpm_fail(failure, stage, 0, EPROTO);
    }
    if (!ok) *handle = DIDS_ESYS_TR_NONE;
    if (ok && public) *public = out;
    else dids_p_Esys_Free(out);
    return ok;
}
