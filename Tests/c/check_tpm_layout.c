// DeviceID's stand-ins for tpm2-tss's structures (CDeviceIDTPM's tss2/tss2.h) against <tss2/tss2_esys.h>: same
// sizes, alignments and offsets, and the same constants. Compiled (-fsyntax-only) where
// libtss2-dev is installed, on Debian 12 (tpm2-tss 3.2.1) and 13 (4.0.1):
//
//   cc -std=c11 -Werror -fsyntax-only -I Sources/CDeviceIDTPM/tss2 -I Sources/CDeviceIDTPM/include
//      -I Sources/CDeviceIDLibraries/include Tests/c/check_tpm_layout.c
#include <stddef.h>
#include <tss2/tss2_esys.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_tcti.h>

// The stand-ins, by their tags, next to the real typedefs.
#define DIDS_CHECK_AGAINST_REAL_HEADERS 1
#include "tss2.h"

#define SAME(real, ours) _Static_assert(sizeof(real) == sizeof(struct ours) && _Alignof(real) == _Alignof(struct ours), #real)
SAME(TPM2B_PUBLIC, dids_tpm2b_public);
SAME(TPMT_PUBLIC, dids_tpmt_public);
SAME(TPM2B_SENSITIVE_CREATE, dids_tpm2b_sensitive_create);
SAME(TPM2B_DATA, dids_tpm2b_data);
SAME(TPML_PCR_SELECTION, dids_tpml_pcr_selection);
SAME(TPM2B_NAME, dids_tpm2b_name);
SAME(TPM2B_DIGEST, dids_tpm2b_digest);
SAME(TPM2B_NONCE, dids_tpm2b_nonce);
SAME(TPM2B_ID_OBJECT, dids_tpm2b_id_object);
SAME(TPM2B_ENCRYPTED_SECRET, dids_tpm2b_encrypted_secret);
SAME(TPMT_SYM_DEF, dids_tpmt_sym_def);
SAME(TPMT_SIG_SCHEME, dids_tpmt_sig_scheme);
SAME(TPM2B_MAX_NV_BUFFER, dids_tpm2b_max_nv_buffer);
SAME(TPM2B_NV_PUBLIC, dids_tpm2b_nv_public);
SAME(TPM2B_AUTH, dids_tpm2b_digest);
SAME(TPMT_TK_HASHCHECK, dids_tpmt_tk_hashcheck);
SAME(TPML_DIGEST, dids_tpml_digest);
SAME(TPM2B_ECC_POINT, dids_tpm2b_ecc_point);
_Static_assert(sizeof(TPMS_PCR_SELECTION) == 8 && offsetof(TPMS_PCR_SELECTION, hash) == DIDS_TPMS_PCR_SELECTION_HASH
               && offsetof(TPMS_PCR_SELECTION, sizeofSelect) == DIDS_TPMS_PCR_SELECTION_SIZE
               && offsetof(TPMS_PCR_SELECTION, pcrSelect) == DIDS_TPMS_PCR_SELECTION_SELECT
               && offsetof(TPML_PCR_SELECTION, pcrSelections) == 4 && TPM2_SE_TRIAL == DIDS_TPM2_SE_TRIAL,
               "PCR selection");
_Static_assert(offsetof(TPM2B_ECC_POINT, point.x) == DIDS_TPM2B_ECC_POINT_X
               && offsetof(TPM2B_ECC_POINT, point.y) == DIDS_TPM2B_ECC_POINT_Y, "ECC point");
_Static_assert(offsetof(TPMT_TK_HASHCHECK, hierarchy) == offsetof(struct dids_tpmt_tk_hashcheck, hierarchy)
               && offsetof(TPMT_TK_HASHCHECK, digest) == offsetof(struct dids_tpmt_tk_hashcheck, digest), "ticket");
// Read only through their leading fields: the offsets and alignment must agree.
_Static_assert(offsetof(TPM2B_ATTEST, attestationData) == offsetof(struct dids_tpm2b_attest, attestationData), "attest");
_Static_assert(offsetof(TPM2B_NV_PUBLIC, nvPublic) == offsetof(struct dids_tpm2b_nv_public, nvPublic)
               && _Alignof(TPM2B_NV_PUBLIC) == _Alignof(struct dids_tpm2b_nv_public), "nvPublic");
_Static_assert(offsetof(TPMS_NV_PUBLIC, nvIndex) == DIDS_TPMS_NV_PUBLIC_INDEX
               && offsetof(TPMS_NV_PUBLIC, nameAlg) == DIDS_TPMS_NV_PUBLIC_NAME_ALG
               && offsetof(TPMS_NV_PUBLIC, attributes) == DIDS_TPMS_NV_PUBLIC_ATTRIBUTES
               && offsetof(TPMS_NV_PUBLIC, authPolicy) == DIDS_TPMS_NV_PUBLIC_AUTH_POLICY
               && offsetof(TPMS_NV_PUBLIC, dataSize) == DIDS_TPMS_NV_PUBLIC_DATA_SIZE, "TPMS_NV_PUBLIC");
_Static_assert((TPMA_NV_AUTHWRITE | (TPM2_NT_COUNTER << TPMA_NV_TPM2_NT_SHIFT) | TPMA_NV_AUTHREAD | TPMA_NV_NO_DA
                | TPMA_NV_ORDERLY) == DIDS_TPM_COUNTER_ATTRIBUTES && TPMA_NV_WRITTEN == DIDS_TPMA_NV_WRITTEN,
               "counter attributes");
_Static_assert(offsetof(TPMS_CAPABILITY_DATA, data) == offsetof(struct dids_tpms_capability_data, data)
               && offsetof(TPMS_CAPABILITY_DATA, data.handles.count) == DIDS_TPMS_CAPABILITY_HANDLES_COUNT
               && offsetof(TPMS_CAPABILITY_DATA, data.handles.handle) == DIDS_TPMS_CAPABILITY_HANDLES
               && TPM2_CAP_HANDLES == DIDS_TPM2_CAP_HANDLES && sizeof(TPMI_YES_NO) == 1
               && TPM2_MAX_CAP_HANDLES == DIDS_TPM_MAX_CAP_HANDLES, "handles");
_Static_assert(offsetof(TPMS_CAPABILITY_DATA, data.tpmProperties.count) == DIDS_TPMS_CAPABILITY_HANDLES_COUNT
               && offsetof(TPMS_CAPABILITY_DATA, data.tpmProperties.tpmProperty) == DIDS_TPMS_CAPABILITY_HANDLES
               && sizeof(TPMS_TAGGED_PROPERTY) == 8 && offsetof(TPMS_TAGGED_PROPERTY, value) == 4
               && TPM2_CAP_TPM_PROPERTIES == DIDS_TPM2_CAP_TPM_PROPERTIES
               && TPM2_PT_MANUFACTURER == DIDS_TPM2_PT_MANUFACTURER
               && TPM2_PT_FIRMWARE_VERSION_1 == DIDS_TPM2_PT_FIRMWARE_VERSION_1
               && TPM2_PT_FIRMWARE_VERSION_2 == DIDS_TPM2_PT_FIRMWARE_VERSION_2, "properties");
_Static_assert(TPM2_ALG_SHA384 == DIDS_TPM2_ALG_SHA384 && TPM2_ALG_SHA512 == DIDS_TPM2_ALG_SHA512
               && TPM2_ECC_NIST_P384 == DIDS_TPM2_ECC_NIST_P384 && TPM2_ECC_NIST_P521 == DIDS_TPM2_ECC_NIST_P521,
               "EK algorithms");
_Static_assert(TPM2_ST_HASHCHECK == DIDS_TPM2_ST_HASHCHECK && TPM2_RH_NULL == DIDS_TPM2_RH_NULL, "null ticket");
_Static_assert(TPM2_RC_NV_RATE == DIDS_TPM2_RC_NV_RATE && TPM2_RC_NV_UNAVAILABLE == DIDS_TPM2_RC_NV_UNAVAILABLE
               && TPM2_RC_NV_SPACE == DIDS_TPM2_RC_NV_SPACE && TPM2_RC_NV_DEFINED == DIDS_TPM2_RC_NV_DEFINED, "NV RCs");
_Static_assert(offsetof(TPMT_SIGNATURE, signature.ecdsa.hash) == DIDS_TPMT_SIGNATURE_HASH
               && offsetof(TPMT_SIGNATURE, signature.ecdsa.signatureR) == DIDS_TPMT_SIGNATURE_ECDSA_R
               && offsetof(TPMT_SIGNATURE, signature.ecdsa.signatureS) == DIDS_TPMT_SIGNATURE_ECDSA_S
               && sizeof(((TPM2B_ECC_PARAMETER *)0)->buffer) == DIDS_TPM_ECC_PARAMETER_MAX, "ECDSA signature");
_Static_assert(offsetof(TPMT_SIGNATURE, signature.rsassa.hash) == DIDS_TPMT_SIGNATURE_HASH
               && offsetof(TPMT_SIGNATURE, signature.rsassa.sig) == DIDS_TPMT_SIGNATURE_RSA_SIG
               && sizeof(((TPM2B_PUBLIC_KEY_RSA *)0)->buffer) == DIDS_TPM_RSA_KEY_BYTES_MAX, "RSASSA signature");
_Static_assert(offsetof(TPMT_SYM_DEF, keyBits) == offsetof(struct dids_tpmt_sym_def, keyBits)
               && offsetof(TPMT_SYM_DEF, mode) == offsetof(struct dids_tpmt_sym_def, mode), "symdef");
_Static_assert(offsetof(TPMT_SIG_SCHEME, details.ecdsa.hashAlg) == offsetof(struct dids_tpmt_sig_scheme, hashAlg), "sig scheme");
_Static_assert(offsetof(TPMT_PUBLIC, authPolicy) == DIDS_TPMT_PUBLIC_AUTH_POLICY
               && offsetof(TPMT_PUBLIC, parameters.rsaDetail.keyBits) == DIDS_TPMT_PUBLIC_CURVE
               && offsetof(TPMT_PUBLIC, parameters.rsaDetail.exponent) == DIDS_TPMT_PUBLIC_RSA_EXPONENT
               && offsetof(TPMT_PUBLIC, unique.rsa) == DIDS_TPMT_PUBLIC_UNIQUE_X, "RSA public");
_Static_assert(offsetof(TPM2B_PUBLIC, publicArea) == offsetof(struct dids_tpm2b_public, publicArea), "publicArea");
_Static_assert(sizeof(TPMT_PUBLIC) == DIDS_TPMT_PUBLIC_SIZE, "TPMT_PUBLIC");
_Static_assert(offsetof(TPMT_PUBLIC, type) == DIDS_TPMT_PUBLIC_TYPE, "type");
_Static_assert(offsetof(TPMT_PUBLIC, nameAlg) == DIDS_TPMT_PUBLIC_NAME_ALG, "nameAlg");
_Static_assert(offsetof(TPMT_PUBLIC, objectAttributes) == DIDS_TPMT_PUBLIC_ATTRIBUTES, "objectAttributes");
_Static_assert(offsetof(TPMT_PUBLIC, parameters.eccDetail.symmetric) == DIDS_TPMT_PUBLIC_SYMMETRIC, "symmetric");
_Static_assert(offsetof(TPMT_PUBLIC, parameters.eccDetail.scheme) == DIDS_TPMT_PUBLIC_SCHEME, "scheme");
_Static_assert(offsetof(TPMT_PUBLIC, parameters.eccDetail.scheme.details.ecdsa.hashAlg) == DIDS_TPMT_PUBLIC_SCHEME + 2, "hashAlg");
_Static_assert(offsetof(TPMT_PUBLIC, parameters.eccDetail.curveID) == DIDS_TPMT_PUBLIC_CURVE, "curveID");
_Static_assert(offsetof(TPMT_PUBLIC, parameters.eccDetail.kdf) == DIDS_TPMT_PUBLIC_KDF, "kdf");
_Static_assert(offsetof(TPMT_PUBLIC, unique.ecc.x) == DIDS_TPMT_PUBLIC_UNIQUE_X, "unique.ecc.x");
_Static_assert(offsetof(TPMT_PUBLIC, unique.ecc.y) == DIDS_TPMT_PUBLIC_UNIQUE_Y, "unique.ecc.y");
_Static_assert(ESYS_TR_NONE == DIDS_ESYS_TR_NONE && ESYS_TR_PASSWORD == DIDS_ESYS_TR_PASSWORD
               && ESYS_TR_RH_OWNER == DIDS_ESYS_TR_RH_OWNER && ESYS_TR_RH_ENDORSEMENT == DIDS_ESYS_TR_RH_ENDORSEMENT,
               "ESYS_TR");
_Static_assert(TPM2_ALG_RSA == DIDS_TPM2_ALG_RSA && TPM2_ALG_AES == DIDS_TPM2_ALG_AES && TPM2_ALG_CFB == DIDS_TPM2_ALG_CFB
               && TPM2_SE_POLICY == DIDS_TPM2_SE_POLICY, "EK algorithms");
_Static_assert((TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN
                | TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_NODA | TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_SIGN_ENCRYPT)
               == DIDS_TPM_AK_ATTRIBUTES, "AK attributes");
_Static_assert((TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN
                | TPMA_OBJECT_ADMINWITHPOLICY | TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT)
               == DIDS_TPM_EK_ATTRIBUTES, "EK attributes");
_Static_assert(TSS2_BASE_RC_TRY_AGAIN == DIDS_TSS2_BASE_RC_TRY_AGAIN
               && TSS2_BASE_RC_MALFORMED_RESPONSE == DIDS_TSS2_BASE_RC_MALFORMED_RESPONSE && TPM2_RC_OBJECT_MEMORY == DIDS_TPM2_RC_OBJECT_MEMORY,
               "TRY_AGAIN");
// The salted session (session/salted.c): its type, key, attributes and ESAPI's response-HMAC failure.
_Static_assert(TPM2_SE_HMAC == DIDS_TPM2_SE_HMAC && TSS2_ESYS_RC_RSP_AUTH_FAILED == DIDS_TSS2_ESYS_RC_RSP_AUTH_FAILED
               && TPMA_SESSION_CONTINUESESSION == DIDS_TPMA_SESSION_CONTINUE
               && TPMA_SESSION_DECRYPT == DIDS_TPMA_SESSION_DECRYPT && TPMA_SESSION_ENCRYPT == DIDS_TPMA_SESSION_ENCRYPT
               && TPMA_SESSION_AUDIT == DIDS_TPMA_SESSION_AUDIT
               && TPM2_PT_PERMANENT == DIDS_TPM2_PT_PERMANENT && TPMA_PERMANENT_OWNERAUTHSET == 1
               && TPMA_PERMANENT_ENDORSEMENTAUTHSET == 2, "salted session");
_Static_assert((TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN
                | TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_NODA | TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT)
               == DIDS_TPM_SALT_KEY_ATTRIBUTES, "salt key attributes");
_Static_assert(TPM2_ALG_ECC == DIDS_TPM2_ALG_ECC && TPM2_ALG_SHA256 == DIDS_TPM2_ALG_SHA256
               && TPM2_ALG_NULL == DIDS_TPM2_ALG_NULL && TPM2_ALG_ECDSA == DIDS_TPM2_ALG_ECDSA
               && TPM2_ALG_RSASSA == DIDS_TPM2_ALG_RSASSA
               && TPM2_ECC_NIST_P256 == DIDS_TPM2_ECC_NIST_P256 && TPM2_SU_CLEAR == DIDS_TPM2_SU_CLEAR, "algorithms");
_Static_assert((TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN
                | TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_NODA | TPMA_OBJECT_SIGN_ENCRYPT) == DIDS_TPM_APP_KEY_ATTRIBUTES,
               "attributes");
_Static_assert(TPM2_RC_INITIALIZE == DIDS_TPM2_RC_INITIALIZE && TPM2_RC_FAILURE == DIDS_TPM2_RC_FAILURE
               && TPM2_RC_LOCKOUT == DIDS_TPM2_RC_LOCKOUT && TPM2_RC_RETRY == DIDS_TPM2_RC_RETRY, "RCs");
// The common context DeviceID's TCTIs (tcti.h) begin with, at the offsets it asserts.
_Static_assert(offsetof(TSS2_TCTI_CONTEXT_COMMON_V1, transmit) == 16, "transmit");
_Static_assert(offsetof(TSS2_TCTI_CONTEXT_COMMON_V1, finalize) == 16 + 2 * sizeof(void *), "finalize");
_Static_assert(offsetof(TSS2_TCTI_CONTEXT_COMMON_V1, setLocality) == 16 + 5 * sizeof(void *), "setLocality");
_Static_assert(sizeof(TSS2_TCTI_CONTEXT_COMMON_V1) == 16 + 6 * sizeof(void *), "common context");

// Functions: the declared prototype is the real one (a pointer's initialisation is an error under
// -Werror if the types differ). Linked (debian/rules), this file references exactly the functions
// DeviceID resolves, for dpkg-shlibdeps.
#define FUNCTION(ret, name, params, args) ret(*const probe_##name) params = name;
#define FUNCTION_VOID(name, params, args) void(*const probe_##name) params = name;
DIDS_TPM_FUNCTIONS(FUNCTION, FUNCTION_VOID)

int main(void) { return 0; }
