// The endorsement keys of the TCG EK Credential Profile for TPM Family 2.0 (version 2.5, Annex B)
// that DeviceID uses (docs/HARDWARE-ID.md, "Endorsement keys"): their templates, where their
// certificates and nonces are, and TPM2_ActivateCredential with each. The templates are the
// profile's, or the one the TPM keeps in a kind's template index: the EK they make is the one its
// certificate certifies.
#include "session.h"

#include <errno.h>
#include <string.h>


// The policies of the profile's EKs (§B.6): PolicyA is PolicySecret(TPM_RH_ENDORSEMENT),
// PolicyC PolicyAuthorizeNV of the policy index I-1/I-2/I-3 (0x01c07f01-3), and a high-range EK's
// authPolicy PolicyB = PolicyOR(PolicyA, PolicyC). One of each per hash; a low-range EK's is
// PolicyA with SHA-256. Tests/tpm/test_endorsement.py derives every digest from its definition.
struct policies { uint16_t hash, size; unsigned char a[64], c[64], b[64]; };
static const struct policies sha256_policies = {
    DIDS_TPM2_ALG_SHA256, 32,
    {0x83, 0x71, 0x97, 0x67, 0x44, 0x84, 0xb3, 0xf8, 0x1a, 0x90, 0xcc, 0x8d, 0x46, 0xa5, 0xd7, 0x24,
     0xfd, 0x52, 0xd7, 0x6e, 0x06, 0x52, 0x0b, 0x64, 0xf2, 0xa1, 0xda, 0x1b, 0x33, 0x14, 0x69, 0xaa},
    {0x37, 0x67, 0xe2, 0xed, 0xd4, 0x3f, 0xf4, 0x5a, 0x3a, 0x7e, 0x1e, 0xae, 0xfc, 0xef, 0x78, 0x64,
     0x3d, 0xca, 0x96, 0x46, 0x32, 0xe7, 0xaa, 0xd8, 0x2c, 0x67, 0x3a, 0x30, 0xd8, 0x63, 0x3f, 0xde},
    {0xca, 0x3d, 0x0a, 0x99, 0xa2, 0xb9, 0x39, 0x06, 0xf7, 0xa3, 0x34, 0x24, 0x14, 0xef, 0xcf, 0xb3,
     0xa3, 0x85, 0xd4, 0x4c, 0xd1, 0xfd, 0x45, 0x90, 0x89, 0xd1, 0x9b, 0x50, 0x71, 0xc0, 0xb7, 0xa0},
};
static const struct policies sha384_policies = {
    DIDS_TPM2_ALG_SHA384, 48,
    {0x8b, 0xbf, 0x22, 0x66, 0x53, 0x7c, 0x17, 0x1c, 0xb5, 0x6e, 0x40, 0x3c, 0x4d, 0xc1, 0xd4, 0xb6,
     0x4f, 0x43, 0x26, 0x11, 0xdc, 0x38, 0x6e, 0x6f, 0x53, 0x20, 0x50, 0xc3, 0x27, 0x8c, 0x93, 0x0e,
     0x14, 0x3e, 0x8b, 0xb1, 0x13, 0x38, 0x24, 0xcc, 0xb4, 0x31, 0x05, 0x38, 0x71, 0xc6, 0xdb, 0x53},
    {0xd6, 0x03, 0x2c, 0xe6, 0x1f, 0x2f, 0xb3, 0xc2, 0x40, 0xeb, 0x3c, 0xf6, 0xa3, 0x32, 0x37, 0xef,
     0x2b, 0x6a, 0x16, 0xf4, 0x29, 0x3c, 0x22, 0xb4, 0x55, 0xe2, 0x61, 0xcf, 0xfd, 0x21, 0x7a, 0xd5,
     0xb4, 0x94, 0x7c, 0x2d, 0x73, 0xe6, 0x30, 0x05, 0xee, 0xd2, 0xdc, 0x2b, 0x35, 0x93, 0xd1, 0x65},
    {0xb2, 0x6e, 0x7d, 0x28, 0xd1, 0x1a, 0x50, 0xbc, 0x53, 0xd8, 0x82, 0xbc, 0xf5, 0xfd, 0x3a, 0x1a,
     0x07, 0x41, 0x48, 0xbb, 0x35, 0xd3, 0xb4, 0xe4, 0xcb, 0x1c, 0x0a, 0xd9, 0xbd, 0xe4, 0x19, 0xca,
     0xcb, 0x47, 0xba, 0x09, 0x69, 0x96, 0x46, 0x15, 0x0f, 0x9f, 0xc0, 0x00, 0xf3, 0xf8, 0x0e, 0x12},
};
static const struct policies sha512_policies = {
    DIDS_TPM2_ALG_SHA512, 64,
    {0x1e, 0x3b, 0x76, 0x50, 0x2c, 0x8a, 0x14, 0x25, 0xaa, 0x0b, 0x7b, 0x3f, 0xc6, 0x46, 0xa1, 0xb0,
     0xfa, 0xe0, 0x63, 0xb0, 0x3b, 0x53, 0x68, 0xf9, 0xc4, 0xcd, 0xde, 0xca, 0xff, 0x08, 0x91, 0xdd,
     0x68, 0x2b, 0xac, 0x1a, 0x85, 0xd4, 0xd8, 0x32, 0xb7, 0x81, 0xea, 0x45, 0x19, 0x15, 0xde, 0x5f,
     0xc5, 0xbf, 0x0d, 0xc4, 0xa1, 0x91, 0x7c, 0xd4, 0x2f, 0xa0, 0x41, 0xe3, 0xf9, 0x98, 0xe0, 0xee},
    {0x58, 0x9e, 0xe1, 0xe1, 0x46, 0x54, 0x47, 0x16, 0xe8, 0xde, 0xaf, 0xe6, 0xdb, 0x24, 0x7b, 0x01,
     0xb8, 0x1e, 0x9f, 0x9c, 0x7d, 0xd1, 0x6b, 0x81, 0x4a, 0xa1, 0x59, 0x13, 0x87, 0x49, 0x10, 0x5f,
     0xba, 0x53, 0x88, 0xdd, 0x1d, 0xea, 0x70, 0x2f, 0x35, 0x24, 0x0c, 0x18, 0x49, 0x33, 0x12, 0x1e,
     0x2c, 0x61, 0xb8, 0xf5, 0x0d, 0x3e, 0xf9, 0x13, 0x93, 0xa4, 0x9a, 0x38, 0xc3, 0xf7, 0x3f, 0xc8},
    {0xb8, 0x22, 0x1c, 0xa6, 0x9e, 0x85, 0x50, 0xa4, 0x91, 0x4d, 0xe3, 0xfa, 0xa6, 0xa1, 0x8c, 0x07,
     0x2c, 0xc0, 0x12, 0x08, 0x07, 0x3a, 0x92, 0x8d, 0x5d, 0x66, 0xd5, 0x9e, 0xf7, 0x9e, 0x49, 0xa4,
     0x29, 0xc4, 0x1a, 0x6b, 0x26, 0x95, 0x71, 0xd5, 0x7e, 0xdb, 0x25, 0xfb, 0xdb, 0x18, 0x38, 0x42,
     0x56, 0x08, 0xb4, 0x13, 0xcd, 0x61, 0x6a, 0x5f, 0x6d, 0xb5, 0xb6, 0x07, 0x1a, 0xf9, 0x9b, 0xea},
};

// One row per kind (enum dids_tpm_ek's order): the key (RSA keyBits, or an ECC curve and its
// coordinate size), the nameAlg's policies, the AES key size, the certificate's index; the low
// range's nonce and template indices follow the certificate's.
static const struct kind {
    uint16_t type, bits_or_curve, coordinate, symmetric;
    const struct policies *policies;
    int high;
    uint32_t certificate;
} kinds[DIDS_TPM_EK_KINDS] = {
    [DIDS_TPM_EK_L1] = {DIDS_TPM2_ALG_RSA, 2048, 0, 128, &sha256_policies, 0, 0x01c00002u},
    [DIDS_TPM_EK_L2] = {DIDS_TPM2_ALG_ECC, DIDS_TPM2_ECC_NIST_P256, 32, 128, &sha256_policies, 0, 0x01c0000au},
    [DIDS_TPM_EK_H1] = {DIDS_TPM2_ALG_RSA, 2048, 0, 128, &sha256_policies, 1, 0x01c00012u},
    [DIDS_TPM_EK_H2] = {DIDS_TPM2_ALG_ECC, DIDS_TPM2_ECC_NIST_P256, 32, 128, &sha256_policies, 1, 0x01c00014u},
    [DIDS_TPM_EK_H3] = {DIDS_TPM2_ALG_ECC, DIDS_TPM2_ECC_NIST_P384, 48, 256, &sha384_policies, 1, 0x01c00016u},
    [DIDS_TPM_EK_H4] = {DIDS_TPM2_ALG_ECC, DIDS_TPM2_ECC_NIST_P521, 66, 256, &sha512_policies, 1, 0x01c00018u},
    [DIDS_TPM_EK_H6] = {DIDS_TPM2_ALG_RSA, 3072, 0, 256, &sha384_policies, 1, 0x01c0001cu},
    [DIDS_TPM_EK_H7] = {DIDS_TPM2_ALG_RSA, 4096, 0, 256, &sha384_policies, 1, 0x01c0001eu},
};

static const struct kind *kind_of(enum dids_tpm_ek ek) {
    return (unsigned)ek < DIDS_TPM_EK_KINDS ? &kinds[ek] : NULL;
}

uint32_t dids_tpm_ek_certificate_index(enum dids_tpm_ek ek) { return kind_of(ek) ? kinds[ek].certificate : 0; }
uint32_t dids_tpm_ek_nonce_index(enum dids_tpm_ek ek) {
    return kind_of(ek) && !kinds[ek].high ? kinds[ek].certificate + 1 : 0;
}
uint32_t dids_tpm_ek_template_index(enum dids_tpm_ek ek) {
    return kind_of(ek) && !kinds[ek].high ? kinds[ek].certificate + 2 : 0;
}

// The profile's template for `k`: low range with a unique of zeros the key's size (a nonce from
// its NV index replacing the first bytes, §2.2.1.5.1), high range with an empty unique.
static int ek_template(TPM2B_PUBLIC *public, const struct kind *k, const struct dids_tpm_bytes *nonce) {
    unsigned char *t = public->publicArea;
    const struct policies *policy = k->policies;
    dids_put16(t + DIDS_TPMT_PUBLIC_TYPE, k->type);
    dids_put16(t + DIDS_TPMT_PUBLIC_NAME_ALG, policy->hash);
    dids_put32(t + DIDS_TPMT_PUBLIC_ATTRIBUTES, k->high ? DIDS_TPM_EK_HIGH_ATTRIBUTES : DIDS_TPM_EK_ATTRIBUTES);
    dids_put16(t + DIDS_TPMT_PUBLIC_AUTH_POLICY, policy->size);
    memcpy(t + DIDS_TPMT_PUBLIC_AUTH_POLICY + 2, k->high ? policy->b : policy->a, policy->size);
    dids_put16(t + DIDS_TPMT_PUBLIC_SYMMETRIC, DIDS_TPM2_ALG_AES);
    dids_put16(t + DIDS_TPMT_PUBLIC_SYMMETRIC + 2, k->symmetric);
    dids_put16(t + DIDS_TPMT_PUBLIC_SYMMETRIC + 4, DIDS_TPM2_ALG_CFB);
    dids_put16(t + DIDS_TPMT_PUBLIC_SCHEME, DIDS_TPM2_ALG_NULL);
    dids_put16(t + DIDS_TPMT_PUBLIC_CURVE, k->bits_or_curve);  // RSA keyBits, or ECC curveID
    size_t unique = 0;
    if (k->type == DIDS_TPM2_ALG_RSA) {
        dids_put32(t + DIDS_TPMT_PUBLIC_RSA_EXPONENT, 0);
        if (!k->high) unique = k->bits_or_curve / 8;
    } else {
        dids_put16(t + DIDS_TPMT_PUBLIC_KDF, DIDS_TPM2_ALG_NULL);
        if (!k->high) unique = k->coordinate;
    }
    if (nonce && nonce->size > unique) return 0;
    dids_put16(t + DIDS_TPMT_PUBLIC_UNIQUE_X, (uint16_t)unique);  // zeros (the template is zeroed)
    if (nonce && nonce->size) memcpy(t + DIDS_TPMT_PUBLIC_UNIQUE_X + 2, nonce->data, nonce->size);
    if (k->type == DIDS_TPM2_ALG_ECC) dids_put16(t + DIDS_TPMT_PUBLIC_UNIQUE_Y, (uint16_t)unique);
    return 1;
}

static int ek_template_of(TPM2B_PUBLIC *template, enum dids_tpm_ek ek, const struct dids_tpm_bytes *nonce,
                          struct dids_tpm_failure *failure) {
    const struct kind *k = kind_of(ek);
    if (!k) return dids_tpm_fail(failure, DIDS_TPM_STAGE_CREATE, 0, EINVAL);
    memset(template, 0, sizeof *template);
    template->size = DIDS_TPMT_PUBLIC_SIZE;
    return ek_template(template, k, nonce) ? 1 : dids_tpm_fail(failure, DIDS_TPM_STAGE_SHAPE, 0, 0);
}

// Whether `a` and `b` are keys the same MakeCredential and policy session serve: the same type,
// nameAlg, authPolicy, symmetric definition, scheme, key size or curve (and an ECC key's KDF).
static int same_kind_of_key(const unsigned char *a, const unsigned char *b) {
    uint16_t type = dids_get16(b + DIDS_TPMT_PUBLIC_TYPE), policy = dids_get16(b + DIDS_TPMT_PUBLIC_AUTH_POLICY);
    if (dids_get16(a + DIDS_TPMT_PUBLIC_TYPE) != type || dids_get16(a + DIDS_TPMT_PUBLIC_NAME_ALG) != dids_get16(b + DIDS_TPMT_PUBLIC_NAME_ALG)
        || dids_get16(a + DIDS_TPMT_PUBLIC_AUTH_POLICY) != policy || policy > 64
        || memcmp(a + DIDS_TPMT_PUBLIC_AUTH_POLICY + 2, b + DIDS_TPMT_PUBLIC_AUTH_POLICY + 2, policy) != 0)
        return 0;
    for (int offset = DIDS_TPMT_PUBLIC_SYMMETRIC; offset <= DIDS_TPMT_PUBLIC_SCHEME; offset += 2)
        if (dids_get16(a + offset) != dids_get16(b + offset)) return 0;
    return dids_get16(a + DIDS_TPMT_PUBLIC_CURVE) == dids_get16(b + DIDS_TPMT_PUBLIC_CURVE)
        && (type == DIDS_TPM2_ALG_RSA || dids_get16(a + DIDS_TPMT_PUBLIC_KDF) == dids_get16(b + DIDS_TPMT_PUBLIC_KDF));
}

// Whether `public` is a key of `template`'s shape: every field but unique (the key itself, which a
// nonce or the TPM's seed decides). The certificate's key is the CA's to check: an EK of the
// template's shape that is not the certified one fails ActivateCredential, never passes it.
static int same_shape(const unsigned char *public, const unsigned char *template) {
    return same_kind_of_key(public, template)
        && dids_get32(public + DIDS_TPMT_PUBLIC_ATTRIBUTES) == dids_get32(template + DIDS_TPMT_PUBLIC_ATTRIBUTES)
        && (dids_get16(template + DIDS_TPMT_PUBLIC_TYPE) != DIDS_TPM2_ALG_RSA
            || dids_get32(public + DIDS_TPMT_PUBLIC_RSA_EXPONENT) == dids_get32(template + DIDS_TPMT_PUBLIC_RSA_EXPONENT));
}

// The template the TPM makes kind `ek`'s EK from, with `nonce` (may be NULL) in unique: the
// profile's, or the TPMT_PUBLIC in the kind's template index where the TPM populates it (§2.2.1.5).
// That one may differ in its attributes, exponent and unique; in anything else MakeCredential or
// the policy session depend on it fails at DIDS_TPM_STAGE_EK_TEMPLATE with EPROTONOSUPPORT (EBADMSG
// when it is not a TPMT_PUBLIC).
static int template_of(dids_tpm *tpm, enum dids_tpm_ek ek, const struct dids_tpm_bytes *nonce, TPM2B_PUBLIC *template,
                       struct dids_tpm_failure *failure) {
    uint32_t index = dids_tpm_ek_template_index(ek), present = 0;
    if (!ek_template_of(template, ek, nonce, failure)) return 0;
    if (!index) return 1;
    if (!dids_tpm_ek_indices(tpm, &present, failure)) return 0;
    if (!(present & (1u << (index - DIDS_TPM_EK_NV_FIRST)))) return 1;
    TPM2B_PUBLIC stored;
    if (!dids_tpm_nv_template(tpm, index, DIDS_TPM_STAGE_EK_TEMPLATE, &stored, failure)) return 0;
    if (!same_kind_of_key(stored.publicArea, template->publicArea))
        return dids_tpm_fail(failure, DIDS_TPM_STAGE_EK_TEMPLATE, 0, EPROTONOSUPPORT);
    if (nonce && nonce->size)  // the nonce padded to the key's size, as in the profile's template
        memcpy(stored.publicArea + DIDS_TPMT_PUBLIC_UNIQUE_X, template->publicArea + DIDS_TPMT_PUBLIC_UNIQUE_X,
               DIDS_TPMT_PUBLIC_SIZE - DIDS_TPMT_PUBLIC_UNIQUE_X);
    *template = stored;
    return 1;
}

int dids_tpm_ek_template_fits(dids_tpm *tpm, enum dids_tpm_ek ek, int *fits, struct dids_tpm_failure *failure) {
    TPM2B_PUBLIC template;
    *fits = 0;
    if (!kind_of(ek)) return dids_tpm_fail(failure, DIDS_TPM_STAGE_EK_TEMPLATE, 0, EINVAL);
    if (template_of(tpm, ek, NULL, &template, failure)) return *fits = 1;
    if (failure->stage != DIDS_TPM_STAGE_EK_TEMPLATE
        || (failure->error_number != EPROTONOSUPPORT && failure->error_number != EBADMSG))
        return 0;
    *failure = (struct dids_tpm_failure){0};
    return 1;
}

// The EK of kind `ek` made from its template (`nonce` in unique), flushed by the caller; its
// public area into `public`.
static int create_ek(dids_tpm *tpm, enum dids_tpm_ek ek, const struct dids_tpm_bytes *nonce, ESYS_TR *handle,
                     TPM2B_PUBLIC *public, struct dids_tpm_failure *failure) {
    *handle = DIDS_ESYS_TR_NONE;
    TPM2B_PUBLIC template;
    if (!template_of(tpm, ek, nonce, &template, failure)) return 0;
    TPM2B_PUBLIC *out = NULL;
    int ok = dids_tpm_create_primary_from(tpm, DIDS_ESYS_TR_RH_ENDORSEMENT, &template, DIDS_TPM_STAGE_CREATE, handle,
                                          &out, failure);
    if (ok) *public = *out;
    dids_p_Esys_Free(out);
    return ok;
}

// The first persistent EK (DIDS_TPM_EK_PERSISTENT_FIRST) of kind `ek`'s template, as an ESAPI
// handle to close, not flush, and its public area; DIDS_ESYS_TR_NONE when there is none.
static int persistent_ek(dids_tpm *tpm, enum dids_tpm_ek ek, ESYS_TR *handle, TPM2B_PUBLIC *found,
                         struct dids_tpm_failure *failure) {
    *handle = DIDS_ESYS_TR_NONE;
    TPM2B_PUBLIC template;
    uint32_t present;
    if (!template_of(tpm, ek, NULL, &template, failure)
        || !dids_tpm_handles_present(tpm, DIDS_TPM_EK_PERSISTENT_FIRST, 32, DIDS_TPM_STAGE_CREATE, &present, failure))
        return 0;
    for (uint32_t k = 0; k < 32 && *handle == DIDS_ESYS_TR_NONE; k++) {
        if (!(present & (1u << k))) continue;
        ESYS_TR object = DIDS_ESYS_TR_NONE, session = DIDS_ESYS_TR_NONE;
        TPM2B_PUBLIC *public = NULL;
        int ok = (session = dids_tpm_audited(tpm, failure)) != DIDS_ESYS_TR_NONE
              && DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_CREATE,
                              dids_p_Esys_TR_FromTPMPublic_Async(tpm->esys, DIDS_TPM_EK_PERSISTENT_FIRST + k,
                                                                 session, DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE),
                              dids_p_Esys_TR_FromTPMPublic_Finish(tpm->esys, &object))
              && (session = dids_tpm_audited(tpm, failure)) != DIDS_ESYS_TR_NONE
              && DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_CREATE,
                              dids_p_Esys_ReadPublic_Async(tpm->esys, object, session, DIDS_ESYS_TR_NONE,
                                                           DIDS_ESYS_TR_NONE),
                              dids_p_Esys_ReadPublic_Finish(tpm->esys, &public, NULL, NULL));
        if (ok && same_shape(public->publicArea, template.publicArea)) {
            *handle = object;
            *found = *public;
        }
        dids_p_Esys_Free(public);
        if (*handle == DIDS_ESYS_TR_NONE) dids_tpm_forget(tpm, &object);
        if (!ok) return 0;
    }
    return 1;
}

// A low-range EK's nonce, when its NV index holds one (`nonce->size` 0 otherwise).
static int ek_nonce(dids_tpm *tpm, enum dids_tpm_ek ek, struct dids_tpm_bytes *nonce, struct dids_tpm_failure *failure);

// The EK of kind `ek`: a persistent one of its template (`*kept` set), else one made from it;
// its public area into `public`. release_ek() lets it go.
static int the_ek(dids_tpm *tpm, enum dids_tpm_ek ek, ESYS_TR *handle, int *kept, TPM2B_PUBLIC *public,
                  struct dids_tpm_failure *failure) {
    unsigned char nonce_bytes[512];
    struct dids_tpm_bytes nonce = {nonce_bytes, sizeof nonce_bytes, 0};
    if (!persistent_ek(tpm, ek, handle, public, failure)) return 0;
    *kept = *handle != DIDS_ESYS_TR_NONE;
    return *kept || (ek_nonce(tpm, ek, &nonce, failure) && create_ek(tpm, ek, &nonce, handle, public, failure));
}

static void release_ek(dids_tpm *tpm, ESYS_TR *handle, int kept) {
    if (kept) dids_tpm_forget(tpm, handle);
    else dids_tpm_flush(tpm, handle);
}

// The TPM's big-endian marshalling of an EK's TPMT_PUBLIC (the shapes of `kinds`: AES-CFB,
// no scheme, RSA exponent or ECC KDF, then unique).
static int marshal_ek_public(const unsigned char *t, struct dids_tpm_bytes *out, struct dids_tpm_failure *failure) {
    uint16_t type = dids_get16(t + DIDS_TPMT_PUBLIC_TYPE), policy = dids_get16(t + DIDS_TPMT_PUBLIC_AUTH_POLICY);
    uint16_t x = dids_get16(t + DIDS_TPMT_PUBLIC_UNIQUE_X), y = type == DIDS_TPM2_ALG_ECC ? dids_get16(t + DIDS_TPMT_PUBLIC_UNIQUE_Y) : 0;
    if (policy > 64 || x > 512 || y > DIDS_TPM_ECC_PARAMETER_MAX) return dids_tpm_fail(failure, DIDS_TPM_STAGE_SHAPE, 0, 0);
    unsigned char m[10 + 64 + 14 + 2 + 512 + 2 + DIDS_TPM_ECC_PARAMETER_MAX];
    size_t n = 0;
#define PUT16(v) (m[n++] = (unsigned char)((v) >> 8), m[n++] = (unsigned char)(v))
    PUT16(type);
    PUT16(dids_get16(t + DIDS_TPMT_PUBLIC_NAME_ALG));
    uint32_t attributes = dids_get32(t + DIDS_TPMT_PUBLIC_ATTRIBUTES);
    PUT16(attributes >> 16);
    PUT16(attributes & 0xffff);
    PUT16(policy);
    memcpy(m + n, t + DIDS_TPMT_PUBLIC_AUTH_POLICY + 2, policy);
    n += policy;
    for (int offset = DIDS_TPMT_PUBLIC_SYMMETRIC; offset <= DIDS_TPMT_PUBLIC_SCHEME; offset += 2) PUT16(dids_get16(t + offset));
    PUT16(dids_get16(t + DIDS_TPMT_PUBLIC_CURVE));  // RSA keyBits, or ECC curveID
    if (type == DIDS_TPM2_ALG_RSA) {
        uint32_t exponent = dids_get32(t + DIDS_TPMT_PUBLIC_RSA_EXPONENT);
        PUT16(exponent >> 16);
        PUT16(exponent & 0xffff);
    } else {
        PUT16(dids_get16(t + DIDS_TPMT_PUBLIC_KDF));
    }
    PUT16(x);
    memcpy(m + n, t + DIDS_TPMT_PUBLIC_UNIQUE_X + 2, x);
    n += x;
    if (type == DIDS_TPM2_ALG_ECC) {
        PUT16(y);
        memcpy(m + n, t + DIDS_TPMT_PUBLIC_UNIQUE_Y + 2, y);
        n += y;
    }
#undef PUT16
    return dids_tpm_put(out, m, n, DIDS_TPM_STAGE_SHAPE, failure);
}

int dids_tpm_ek_public(dids_tpm *tpm, enum dids_tpm_ek ek, struct dids_tpm_bytes *public_area,
                       struct dids_tpm_failure *failure) {
    if (!kind_of(ek)) return dids_tpm_fail(failure, DIDS_TPM_STAGE_CREATE, 0, EINVAL);
    ESYS_TR handle = DIDS_ESYS_TR_NONE;
    int kept = 0;
    TPM2B_PUBLIC public;
    int ok = the_ek(tpm, ek, &handle, &kept, &public, failure) && marshal_ek_public(public.publicArea, public_area, failure);
    release_ek(tpm, &handle, kept);
    return ok;
}

int dids_tpm_ek_indices(dids_tpm *tpm, uint32_t *present, struct dids_tpm_failure *failure) {
    return dids_tpm_handles_present(tpm, DIDS_TPM_EK_NV_FIRST, 32, DIDS_TPM_STAGE_EK_CERTIFICATE, present, failure);
}

int dids_tpm_ek_chain_indices(dids_tpm *tpm, uint32_t present[8], struct dids_tpm_failure *failure) {
    return dids_tpm_handles_present(tpm, DIDS_TPM_EK_CHAIN_FIRST, 256, DIDS_TPM_STAGE_EK_CERTIFICATE, present, failure);
}

int dids_tpm_ek_chain_part(dids_tpm *tpm, uint32_t k, struct dids_tpm_bytes *part, struct dids_tpm_failure *failure) {
    if (k >= 256) return dids_tpm_fail(failure, DIDS_TPM_STAGE_EK_CERTIFICATE, 0, EINVAL);
    return dids_tpm_nv_read(tpm, DIDS_TPM_EK_CHAIN_FIRST + k, DIDS_TPM_STAGE_EK_CERTIFICATE, part, failure);
}

int dids_tpm_ek_certificate(dids_tpm *tpm, enum dids_tpm_ek ek, struct dids_tpm_bytes *certificate,
                            struct dids_tpm_failure *failure) {
    if (!kind_of(ek)) return dids_tpm_fail(failure, DIDS_TPM_STAGE_EK_CERTIFICATE, 0, EINVAL);
    return dids_tpm_nv_read(tpm, kinds[ek].certificate, DIDS_TPM_STAGE_EK_CERTIFICATE, certificate, failure);
}

// A policy session of the EK's nameAlg that satisfies its authPolicy: PolicySecret(endorsement),
// then, for a high-range EK, PolicyOR over {PolicyA, PolicyC}.
static int ek_session(dids_tpm *tpm, const struct kind *k, ESYS_TR *session, struct dids_tpm_failure *failure) {
    const TPMT_SYM_DEF no_symmetric = {.algorithm = DIDS_TPM2_ALG_NULL};
    const struct policies *policy = k->policies;
    int ok = DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_SESSION,
                          dids_p_Esys_StartAuthSession_Async(tpm->esys, DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE,
                                                             DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE,
                                                             NULL, DIDS_TPM2_SE_POLICY, &no_symmetric, policy->hash),
                          dids_p_Esys_StartAuthSession_Finish(tpm->esys, session))
          && DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_SESSION,
                          dids_p_Esys_PolicySecret_Async(tpm->esys, DIDS_ESYS_TR_RH_ENDORSEMENT, *session,
                                                         DIDS_ESYS_TR_PASSWORD, DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE,
                                                         NULL, NULL, NULL, 0),
                          dids_p_Esys_PolicySecret_Finish(tpm->esys, NULL, NULL));
    if (!ok || !k->high) return ok;
    TPML_DIGEST branches;
    memset(&branches, 0, sizeof branches);
    branches.count = 2;
    branches.digests[0].size = branches.digests[1].size = policy->size;
    memcpy(branches.digests[0].buffer, policy->a, policy->size);
    memcpy(branches.digests[1].buffer, policy->c, policy->size);
    return DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_SESSION,
                        dids_p_Esys_PolicyOR_Async(tpm->esys, *session, DIDS_ESYS_TR_NONE, DIDS_ESYS_TR_NONE,
                                                   DIDS_ESYS_TR_NONE, &branches),
                        dids_p_Esys_PolicyOR_Finish(tpm->esys));
}

static int ek_nonce(dids_tpm *tpm, enum dids_tpm_ek ek, struct dids_tpm_bytes *nonce, struct dids_tpm_failure *failure) {
    nonce->size = 0;
    uint32_t index = dids_tpm_ek_nonce_index(ek), present;
    if (!index) return 1;
    if (!dids_tpm_ek_indices(tpm, &present, failure)) return 0;
    if (!(present & (1u << (index - DIDS_TPM_EK_NV_FIRST)))) return 1;
    return dids_tpm_nv_read(tpm, index, DIDS_TPM_STAGE_EK_CERTIFICATE, nonce, failure);
}

int dids_tpm_activate(dids_tpm *tpm, enum dids_tpm_ek ek, const unsigned char ak_unique[32],
                      const unsigned char *credential_blob, size_t credential_blob_size,
                      const unsigned char *encrypted_secret, size_t encrypted_secret_size,
                      struct dids_tpm_bytes *credential, struct dids_tpm_failure *failure) {
    TPM2B_ID_OBJECT blob;
    TPM2B_ENCRYPTED_SECRET secret;
    const struct kind *k = kind_of(ek);
    if (!k || credential_blob_size > sizeof blob.credential || encrypted_secret_size > sizeof secret.secret)
        return dids_tpm_fail(failure, DIDS_TPM_STAGE_ACTIVATE, 0, EINVAL);
    blob.size = (uint16_t)credential_blob_size;
    if (credential_blob_size) memcpy(blob.credential, credential_blob, credential_blob_size);
    secret.size = (uint16_t)encrypted_secret_size;
    if (encrypted_secret_size) memcpy(secret.secret, encrypted_secret, encrypted_secret_size);
    ESYS_TR ak = DIDS_ESYS_TR_NONE, ek_handle = DIDS_ESYS_TR_NONE, session = DIDS_ESYS_TR_NONE;
    ESYS_TR salted = DIDS_ESYS_TR_NONE;
    TPM2B_DIGEST *recovered = NULL;
    TPM2B_PUBLIC public;
    int kept = 0;
    // The AK's authorisation is the salted session's: the recovered credential, the secret the CA
    // checks, travels encrypted, and the answer is HMACed.
    int ok = the_ek(tpm, ek, &ek_handle, &kept, &public, failure)
          && dids_tpm_create_primary(tpm, DIDS_TPM_ATTESTATION_KEY, ak_unique, &ak, NULL, failure)
          && ek_session(tpm, k, &session, failure)
          && (salted = dids_tpm_salted(tpm, DIDS_TPMA_SESSION_DECRYPT | DIDS_TPMA_SESSION_ENCRYPT, failure))
                 != DIDS_ESYS_TR_NONE
          && (DIDS_TPM_RUN(tpm, failure, DIDS_TPM_STAGE_ACTIVATE,
                           dids_p_Esys_ActivateCredential_Async(tpm->esys, ak, ek_handle, salted,
                                                                session, DIDS_ESYS_TR_NONE, &blob, &secret),
                           dids_p_Esys_ActivateCredential_Finish(tpm->esys, &recovered))
              || dids_tpm_refused_salted(tpm, DIDS_ESYS_TR_NONE, failure))
          && dids_tpm_put(credential, recovered->buffer, recovered->size, DIDS_TPM_STAGE_ACTIVATE, failure);
    dids_p_Esys_Free(recovered);
    // ESAPI starts sessions with continueSession set, so the TPM keeps this one after the command:
    // flushed here on every path (swtpm, without a resource manager, has three session slots).
    dids_tpm_flush(tpm, &session);
    release_ek(tpm, &ek_handle, kept);
    dids_tpm_flush(tpm, &ak);
    return ok;
}
