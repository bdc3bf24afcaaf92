#ifndef DIDS_TSS2_H
#define DIDS_TSS2_H
// tpm2-tss's ABI as DeviceID declares it, the lowest layer of the TPM room: the structures and
// constants of ESAPI (libtss2-esys.so.0) and its TCTIs DeviceID uses, hand-declared with the sizes
// and offsets of tpm2-tss 3.2.1 (Debian 12) and 4.0.1 (Debian 13), which are the same; with
// DIDS_CHECK_AGAINST_REAL_HEADERS, <tss2/tss2_esys.h> declares them and
// Tests/c/check_tpm_layout.c asserts the layouts and prototypes are equal. Private to
// CDeviceIDTPM: Swift sees only include/dids_tpm.h.
#include "dids_tpm.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

// A field at a documented offset of a structure in tpm2-tss's layout (host byte order, which is
// tpm2-tss's; unaligned where the offset is): the one set of byte helpers of the TPM room.
static inline void dids_put16(unsigned char *p, uint16_t v) { memcpy(p, &v, 2); }
static inline void dids_put32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static inline uint16_t dids_get16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t dids_get32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }

// Only what DeviceID's few commands need, as byte-exact stand-ins (tagged dids_*, so that the
// check can compare them with the real ones): unions and nested structures are byte arrays of
// their real size, filled and read at their documented offsets by tpm_*.c. Structures ESAPI
// allocates and returns (TPM2B_ATTEST, TPMT_SIGNATURE, ...) are read only through their leading
// size field and fixed offsets, never by value.
struct dids_tpm2b_public { uint16_t size; _Alignas(4) uint8_t publicArea[612]; };           // 616
struct dids_tpmt_public { _Alignas(4) uint8_t bytes[612]; };                                 // 612
struct dids_tpm2b_sensitive_create { uint16_t size; uint8_t sensitive[324]; };               // 326
struct dids_tpm2b_data { uint16_t size; uint8_t buffer[64]; };                               // 66
struct dids_tpml_pcr_selection { uint32_t count; uint8_t pcrSelections[128]; };              // 132
struct dids_tpm2b_name { uint16_t size; uint8_t name[68]; };                                 // 70
struct dids_tpm2b_digest { uint16_t size; uint8_t buffer[64]; };                             // 66
struct dids_tpm2b_nonce { uint16_t size; uint8_t buffer[64]; };                              // 66
struct dids_tpm2b_id_object { uint16_t size; uint8_t credential[132]; };                     // 134
struct dids_tpm2b_encrypted_secret { uint16_t size; uint8_t secret[512]; };                  // 514
struct dids_tpmt_sym_def { uint16_t algorithm; uint16_t keyBits; uint16_t mode; };           // 6
struct dids_tpmt_sig_scheme { uint16_t scheme; uint16_t hashAlg; uint8_t rest[2]; };         // 6
struct dids_tpm2b_max_nv_buffer { uint16_t size; uint8_t buffer[2048]; };                    // 2050
struct dids_tpm2b_attest { uint16_t size; uint8_t attestationData[]; };                      // read only
struct dids_tpmt_signature { uint16_t sigAlg; uint8_t signature[]; };                        // read only
struct dids_tpm2b_nv_public { uint16_t size; _Alignas(4) uint8_t nvPublic[80]; };            // 84
struct dids_tpms_capability_data { uint32_t capability; uint8_t data[]; };                   // read only
struct dids_tpmt_tk_hashcheck { uint16_t tag; uint32_t hierarchy; struct dids_tpm2b_digest digest; };  // 76
struct dids_tpml_digest { uint32_t count; struct dids_tpm2b_digest digests[8]; };            // 532
// TPMS_ECC_POINT: x then y, each a TPM2B_ECC_PARAMETER (a 16-bit size and 128 bytes).
struct dids_tpm2b_ecc_point { uint16_t size; uint8_t point[260]; };                          // 262
#define DIDS_TPM2B_ECC_POINT_X 2
#define DIDS_TPM2B_ECC_POINT_Y 132

#ifndef DIDS_CHECK_AGAINST_REAL_HEADERS
typedef uint32_t TSS2_RC;
typedef uint32_t ESYS_TR;
typedef uint32_t TPM2_HANDLE;
typedef uint16_t TPM2_SU;
typedef uint8_t TPM2_SE;
typedef uint8_t TPMA_SESSION;
typedef uint16_t TPMI_ALG_HASH;
typedef struct ESYS_CONTEXT ESYS_CONTEXT;
typedef struct TSS2_TCTI_OPAQUE_CONTEXT_BLOB TSS2_TCTI_CONTEXT;
typedef struct TSS2_ABI_VERSION TSS2_ABI_VERSION;

typedef struct dids_tpm2b_public TPM2B_PUBLIC;
typedef struct dids_tpmt_public TPMT_PUBLIC;
typedef struct dids_tpm2b_sensitive_create TPM2B_SENSITIVE_CREATE;
typedef struct dids_tpm2b_data TPM2B_DATA;
typedef struct dids_tpml_pcr_selection TPML_PCR_SELECTION;
typedef struct dids_tpm2b_name TPM2B_NAME;
typedef struct dids_tpm2b_digest TPM2B_DIGEST;
typedef struct dids_tpm2b_nonce TPM2B_NONCE;
typedef struct dids_tpm2b_id_object TPM2B_ID_OBJECT;
typedef struct dids_tpm2b_encrypted_secret TPM2B_ENCRYPTED_SECRET;
typedef struct dids_tpmt_sym_def TPMT_SYM_DEF;
typedef struct dids_tpmt_sig_scheme TPMT_SIG_SCHEME;
typedef struct dids_tpm2b_max_nv_buffer TPM2B_MAX_NV_BUFFER;
typedef struct dids_tpm2b_attest TPM2B_ATTEST;
typedef struct dids_tpmt_signature TPMT_SIGNATURE;
typedef struct dids_tpm2b_nv_public TPM2B_NV_PUBLIC;
typedef struct dids_tpm2b_digest TPM2B_AUTH;
typedef struct dids_tpmt_tk_hashcheck TPMT_TK_HASHCHECK;
typedef struct dids_tpml_digest TPML_DIGEST;
typedef struct dids_tpms_capability_data TPMS_CAPABILITY_DATA;
typedef struct dids_tpm2b_ecc_point TPM2B_ECC_POINT;
typedef uint8_t TPMI_YES_NO;
typedef uint32_t TPM2_CAP;
typedef struct TPM2B_CREATION_DATA TPM2B_CREATION_DATA;
typedef struct TPMT_TK_CREATION TPMT_TK_CREATION;
typedef struct TPM2B_TIMEOUT TPM2B_TIMEOUT;
typedef struct TPMT_TK_AUTH TPMT_TK_AUTH;

#endif

// TPMT_PUBLIC offsets (in TPM2B_PUBLIC.publicArea, which starts 4 bytes into TPM2B_PUBLIC in the
// real layout: see DIDS_TPM_PUBLIC_AREA_OFFSET).
#define DIDS_TPM_PUBLIC_AREA_OFFSET 4
#define DIDS_TPMT_PUBLIC_TYPE 0
#define DIDS_TPMT_PUBLIC_NAME_ALG 2
#define DIDS_TPMT_PUBLIC_ATTRIBUTES 4
#define DIDS_TPMT_PUBLIC_AUTH_POLICY 8
#define DIDS_TPMT_PUBLIC_SYMMETRIC 76
#define DIDS_TPMT_PUBLIC_SCHEME 82
#define DIDS_TPMT_PUBLIC_CURVE 88          // ECC: curveID; RSA: keyBits
#define DIDS_TPMT_PUBLIC_KDF 90
#define DIDS_TPMT_PUBLIC_RSA_EXPONENT 92
#define DIDS_TPMT_PUBLIC_UNIQUE_X 96       // ECC: unique.ecc.x; RSA: unique.rsa
#define DIDS_TPMT_PUBLIC_UNIQUE_Y 226
#define DIDS_TPMT_PUBLIC_SIZE 612
// TPMT_SIGNATURE: sigAlg, hash, then (ECDSA) r and s as TPM2B_ECC_PARAMETER (2 + 128 bytes), or
// (RSASSA) the signature as TPM2B_PUBLIC_KEY_RSA (2 + 512 bytes).
#define DIDS_TPMT_SIGNATURE_HASH 2
#define DIDS_TPMT_SIGNATURE_RSA_SIG 4
#define DIDS_TPM_RSA_KEY_BYTES_MAX 512
#define DIDS_TPMT_SIGNATURE_ECDSA_R 4
#define DIDS_TPMT_SIGNATURE_ECDSA_S 134
#define DIDS_TPM_ECC_PARAMETER_MAX 128
// TPMS_NV_PUBLIC: nvIndex, nameAlg, attributes, authPolicy, dataSize.
#define DIDS_TPMS_NV_PUBLIC_INDEX 0
#define DIDS_TPMS_NV_PUBLIC_NAME_ALG 4
#define DIDS_TPMS_NV_PUBLIC_ATTRIBUTES 8
#define DIDS_TPMS_NV_PUBLIC_AUTH_POLICY 12
#define DIDS_TPMS_NV_PUBLIC_DATA_SIZE 78

#define DIDS_ESYS_TR_NONE 0xfffu
#define DIDS_ESYS_TR_PASSWORD 0x0ffu
#define DIDS_ESYS_TR_RH_OWNER 0x101u
#define DIDS_ESYS_TR_RH_ENDORSEMENT 0x10bu
#define DIDS_TPM2_SU_CLEAR 0x0000u
#define DIDS_TPM2_SE_HMAC 0x00u
#define DIDS_TPM2_SE_POLICY 0x01u
#define DIDS_TPM2_SE_TRIAL 0x03u
// TPMS_PCR_SELECTION in TPML_PCR_SELECTION.pcrSelections: hash, sizeofSelect, pcrSelect[4]; 8 bytes.
#define DIDS_TPMS_PCR_SELECTION_HASH 0
#define DIDS_TPMS_PCR_SELECTION_SIZE 2
#define DIDS_TPMS_PCR_SELECTION_SELECT 3
// The TPM's own facts (algorithms, attributes, handles, codes): include/dids_tpm_facts.h, from
// tpm-facts.tsv. TPM2_GetCapability(TPM_CAP_HANDLES): TPMS_CAPABILITY_DATA's TPML_HANDLE, its
// count and handles; (TPM_CAP_TPM_PROPERTIES): TPML_TAGGED_TPM_PROPERTY's count, then (property,
// value) pairs at the same offsets.
#define DIDS_TPMS_CAPABILITY_HANDLES_COUNT 4
#define DIDS_TPMS_CAPABILITY_HANDLES 8
#define DIDS_TPM_MAX_CAP_HANDLES 254         // TPML_HANDLE's room (TPM2_MAX_CAP_HANDLES)

#define DIDS_TSS2_BASE_RC_TRY_AGAIN 9u
// tpm2-tss's, in any of its layers: an answer shorter or longer than its own parts say.
#define DIDS_TSS2_BASE_RC_MALFORMED_RESPONSE 17u
// ESAPI's: an answer whose HMAC is not the one its session's key gives (TSS2_ESYS_RC_RSP_AUTH_FAILED).
#define DIDS_TSS2_ESYS_RC_RSP_AUTH_FAILED 0x0007001bu

// Every TPM command is sent with ESAPI's _Async and collected with _Finish under ESAPI's
// timeout, so that a silent TPM ends at the caller's deadline (the blocking forms wait forever).
#define DIDS_TPM_FUNCTIONS(X, XV) \
    X(TSS2_RC, Esys_Initialize, (ESYS_CONTEXT **esys_context, TSS2_TCTI_CONTEXT *tcti, TSS2_ABI_VERSION *abiVersion), \
      (esys_context, tcti, abiVersion)) \
    XV(Esys_Finalize, (ESYS_CONTEXT **context), (context)) \
    X(TSS2_RC, Esys_SetTimeout, (ESYS_CONTEXT *esys_context, int32_t timeout), (esys_context, timeout)) \
    X(TSS2_RC, Esys_Startup_Async, (ESYS_CONTEXT *esysContext, TPM2_SU startupType), (esysContext, startupType)) \
    X(TSS2_RC, Esys_Startup_Finish, (ESYS_CONTEXT *esysContext), (esysContext)) \
    X(TSS2_RC, Esys_CreatePrimary_Async, \
      (ESYS_CONTEXT *esysContext, ESYS_TR primaryHandle, ESYS_TR shandle1, ESYS_TR shandle2, ESYS_TR shandle3, \
       const TPM2B_SENSITIVE_CREATE *inSensitive, const TPM2B_PUBLIC *inPublic, const TPM2B_DATA *outsideInfo, \
       const TPML_PCR_SELECTION *creationPCR), \
      (esysContext, primaryHandle, shandle1, shandle2, shandle3, inSensitive, inPublic, outsideInfo, creationPCR)) \
    X(TSS2_RC, Esys_CreatePrimary_Finish, \
      (ESYS_CONTEXT *esysContext, ESYS_TR *objectHandle, TPM2B_PUBLIC **outPublic, \
       TPM2B_CREATION_DATA **creationData, TPM2B_DIGEST **creationHash, TPMT_TK_CREATION **creationTicket), \
      (esysContext, objectHandle, outPublic, creationData, creationHash, creationTicket)) \
    X(TSS2_RC, Esys_FlushContext_Async, (ESYS_CONTEXT *esysContext, ESYS_TR flushHandle), (esysContext, flushHandle)) \
    X(TSS2_RC, Esys_FlushContext_Finish, (ESYS_CONTEXT *esysContext), (esysContext)) \
    X(TSS2_RC, Esys_TR_FromTPMPublic_Async, \
      (ESYS_CONTEXT *esysContext, TPM2_HANDLE tpm_handle, ESYS_TR shandle1, ESYS_TR shandle2, ESYS_TR shandle3), \
      (esysContext, tpm_handle, shandle1, shandle2, shandle3)) \
    X(TSS2_RC, Esys_TR_FromTPMPublic_Finish, (ESYS_CONTEXT *esysContext, ESYS_TR *object), (esysContext, object)) \
    X(TSS2_RC, Esys_ReadPublic_Async, \
      (ESYS_CONTEXT *esysContext, ESYS_TR objectHandle, ESYS_TR shandle1, ESYS_TR shandle2, ESYS_TR shandle3), \
      (esysContext, objectHandle, shandle1, shandle2, shandle3)) \
    X(TSS2_RC, Esys_ReadPublic_Finish, \
      (ESYS_CONTEXT *esysContext, TPM2B_PUBLIC **outPublic, TPM2B_NAME **name, TPM2B_NAME **qualifiedName), \
      (esysContext, outPublic, name, qualifiedName)) \
    X(TSS2_RC, Esys_NV_ReadPublic_Async, \
      (ESYS_CONTEXT *esysContext, ESYS_TR nvIndex, ESYS_TR shandle1, ESYS_TR shandle2, ESYS_TR shandle3), \
      (esysContext, nvIndex, shandle1, shandle2, shandle3)) \
    X(TSS2_RC, Esys_NV_ReadPublic_Finish, (ESYS_CONTEXT *esysContext, TPM2B_NV_PUBLIC **nvPublic, TPM2B_NAME **nvName), \
      (esysContext, nvPublic, nvName)) \
    X(TSS2_RC, Esys_NV_Read_Async, \
      (ESYS_CONTEXT *esysContext, ESYS_TR authHandle, ESYS_TR nvIndex, ESYS_TR shandle1, ESYS_TR shandle2, \
       ESYS_TR shandle3, uint16_t size, uint16_t offset), \
      (esysContext, authHandle, nvIndex, shandle1, shandle2, shandle3, size, offset)) \
    X(TSS2_RC, Esys_NV_Read_Finish, (ESYS_CONTEXT *esysContext, TPM2B_MAX_NV_BUFFER **data), (esysContext, data)) \
    X(TSS2_RC, Esys_StartAuthSession_Async, \
      (ESYS_CONTEXT *esysContext, ESYS_TR tpmKey, ESYS_TR bind, ESYS_TR shandle1, ESYS_TR shandle2, ESYS_TR shandle3, \
       const TPM2B_NONCE *nonceCaller, TPM2_SE sessionType, const TPMT_SYM_DEF *symmetric, TPMI_ALG_HASH authHash), \
      (esysContext, tpmKey, bind, shandle1, shandle2, shandle3, nonceCaller, sessionType, symmetric, authHash)) \
    X(TSS2_RC, Esys_StartAuthSession_Finish, (ESYS_CONTEXT *esysContext, ESYS_TR *sessionHandle), \
      (esysContext, sessionHandle)) \
    X(TSS2_RC, Esys_PolicySecret_Async, \
      (ESYS_CONTEXT *esysContext, ESYS_TR authHandle, ESYS_TR policySession, ESYS_TR shandle1, ESYS_TR shandle2, \
       ESYS_TR shandle3, const TPM2B_NONCE *nonceTPM, const TPM2B_DIGEST *cpHashA, const TPM2B_NONCE *policyRef, \
       int32_t expiration), \
      (esysContext, authHandle, policySession, shandle1, shandle2, shandle3, nonceTPM, cpHashA, policyRef, expiration)) \
    X(TSS2_RC, Esys_PolicySecret_Finish, (ESYS_CONTEXT *esysContext, TPM2B_TIMEOUT **timeout, TPMT_TK_AUTH **policyTicket), \
      (esysContext, timeout, policyTicket)) \
    X(TSS2_RC, Esys_PolicyOR_Async, \
      (ESYS_CONTEXT *esysContext, ESYS_TR policySession, ESYS_TR shandle1, ESYS_TR shandle2, ESYS_TR shandle3, \
       const TPML_DIGEST *pHashList), \
      (esysContext, policySession, shandle1, shandle2, shandle3, pHashList)) \
    X(TSS2_RC, Esys_PolicyOR_Finish, (ESYS_CONTEXT *esysContext), (esysContext)) \
    X(TSS2_RC, Esys_PolicyPCR_Async, \
      (ESYS_CONTEXT *esysContext, ESYS_TR policySession, ESYS_TR shandle1, ESYS_TR shandle2, ESYS_TR shandle3, \
       const TPM2B_DIGEST *pcrDigest, const TPML_PCR_SELECTION *pcrs), \
      (esysContext, policySession, shandle1, shandle2, shandle3, pcrDigest, pcrs)) \
    X(TSS2_RC, Esys_PolicyPCR_Finish, (ESYS_CONTEXT *esysContext), (esysContext)) \
    X(TSS2_RC, Esys_PolicyAuthValue_Async, \
      (ESYS_CONTEXT *esysContext, ESYS_TR policySession, ESYS_TR shandle1, ESYS_TR shandle2, ESYS_TR shandle3), \
      (esysContext, policySession, shandle1, shandle2, shandle3)) \
    X(TSS2_RC, Esys_PolicyAuthValue_Finish, (ESYS_CONTEXT *esysContext), (esysContext)) \
    X(TSS2_RC, Esys_PolicyGetDigest_Async, \
      (ESYS_CONTEXT *esysContext, ESYS_TR policySession, ESYS_TR shandle1, ESYS_TR shandle2, ESYS_TR shandle3), \
      (esysContext, policySession, shandle1, shandle2, shandle3)) \
    X(TSS2_RC, Esys_PolicyGetDigest_Finish, (ESYS_CONTEXT *esysContext, TPM2B_DIGEST **policyDigest), \
      (esysContext, policyDigest)) \
    X(TSS2_RC, Esys_PCR_Read_Async, \
      (ESYS_CONTEXT *esysContext, ESYS_TR shandle1, ESYS_TR shandle2, ESYS_TR shandle3, \
       const TPML_PCR_SELECTION *pcrSelectionIn), \
      (esysContext, shandle1, shandle2, shandle3, pcrSelectionIn)) \
    X(TSS2_RC, Esys_PCR_Read_Finish, \
      (ESYS_CONTEXT *esysContext, uint32_t *pcrUpdateCounter, TPML_PCR_SELECTION **pcrSelectionOut, \
       TPML_DIGEST **pcrValues), \
      (esysContext, pcrUpdateCounter, pcrSelectionOut, pcrValues)) \
    X(TSS2_RC, Esys_ActivateCredential_Async, \
      (ESYS_CONTEXT *esysContext, ESYS_TR activateHandle, ESYS_TR keyHandle, ESYS_TR shandle1, ESYS_TR shandle2, \
       ESYS_TR shandle3, const TPM2B_ID_OBJECT *credentialBlob, const TPM2B_ENCRYPTED_SECRET *secret), \
      (esysContext, activateHandle, keyHandle, shandle1, shandle2, shandle3, credentialBlob, secret)) \
    X(TSS2_RC, Esys_ActivateCredential_Finish, (ESYS_CONTEXT *esysContext, TPM2B_DIGEST **certInfo), (esysContext, certInfo)) \
    X(TSS2_RC, Esys_Certify_Async, \
      (ESYS_CONTEXT *esysContext, ESYS_TR objectHandle, ESYS_TR signHandle, ESYS_TR shandle1, ESYS_TR shandle2, \
       ESYS_TR shandle3, const TPM2B_DATA *qualifyingData, const TPMT_SIG_SCHEME *inScheme), \
      (esysContext, objectHandle, signHandle, shandle1, shandle2, shandle3, qualifyingData, inScheme)) \
    X(TSS2_RC, Esys_Certify_Finish, (ESYS_CONTEXT *esysContext, TPM2B_ATTEST **certifyInfo, TPMT_SIGNATURE **signature), \
      (esysContext, certifyInfo, signature)) \
    X(TSS2_RC, Esys_NV_DefineSpace_Async, \
      (ESYS_CONTEXT *esysContext, ESYS_TR authHandle, ESYS_TR shandle1, ESYS_TR shandle2, ESYS_TR shandle3, \
       const TPM2B_AUTH *auth, const TPM2B_NV_PUBLIC *publicInfo), \
      (esysContext, authHandle, shandle1, shandle2, shandle3, auth, publicInfo)) \
    X(TSS2_RC, Esys_NV_DefineSpace_Finish, (ESYS_CONTEXT *esysContext, ESYS_TR *nvHandle), (esysContext, nvHandle)) \
    X(TSS2_RC, Esys_NV_Increment_Async, \
      (ESYS_CONTEXT *esysContext, ESYS_TR authHandle, ESYS_TR nvIndex, ESYS_TR shandle1, ESYS_TR shandle2, \
       ESYS_TR shandle3), \
      (esysContext, authHandle, nvIndex, shandle1, shandle2, shandle3)) \
    X(TSS2_RC, Esys_NV_Increment_Finish, (ESYS_CONTEXT *esysContext), (esysContext)) \
    X(TSS2_RC, Esys_GetCapability_Async, \
      (ESYS_CONTEXT *esysContext, ESYS_TR shandle1, ESYS_TR shandle2, ESYS_TR shandle3, TPM2_CAP capability, \
       uint32_t property, uint32_t propertyCount), \
      (esysContext, shandle1, shandle2, shandle3, capability, property, propertyCount)) \
    X(TSS2_RC, Esys_GetCapability_Finish, \
      (ESYS_CONTEXT *esysContext, TPMI_YES_NO *moreData, TPMS_CAPABILITY_DATA **capabilityData), \
      (esysContext, moreData, capabilityData)) \
    X(TSS2_RC, Esys_Sign_Async, \
      (ESYS_CONTEXT *esysContext, ESYS_TR keyHandle, ESYS_TR shandle1, ESYS_TR shandle2, ESYS_TR shandle3, \
       const TPM2B_DIGEST *digest, const TPMT_SIG_SCHEME *inScheme, const TPMT_TK_HASHCHECK *validation), \
      (esysContext, keyHandle, shandle1, shandle2, shandle3, digest, inScheme, validation)) \
    X(TSS2_RC, Esys_Sign_Finish, (ESYS_CONTEXT *esysContext, TPMT_SIGNATURE **signature), (esysContext, signature)) \
    X(TSS2_RC, Esys_ECDH_KeyGen_Async, \
      (ESYS_CONTEXT *esysContext, ESYS_TR keyHandle, ESYS_TR shandle1, ESYS_TR shandle2, ESYS_TR shandle3), \
      (esysContext, keyHandle, shandle1, shandle2, shandle3)) \
    X(TSS2_RC, Esys_ECDH_KeyGen_Finish, (ESYS_CONTEXT *esysContext, TPM2B_ECC_POINT **zPoint, TPM2B_ECC_POINT **pubPoint), \
      (esysContext, zPoint, pubPoint)) \
    X(TSS2_RC, Esys_ECDH_ZGen_Async, \
      (ESYS_CONTEXT *esysContext, ESYS_TR keyHandle, ESYS_TR shandle1, ESYS_TR shandle2, ESYS_TR shandle3, \
       const TPM2B_ECC_POINT *inPoint), \
      (esysContext, keyHandle, shandle1, shandle2, shandle3, inPoint)) \
    X(TSS2_RC, Esys_ECDH_ZGen_Finish, (ESYS_CONTEXT *esysContext, TPM2B_ECC_POINT **outPoint), (esysContext, outPoint)) \
    X(TSS2_RC, Esys_TR_GetName, (ESYS_CONTEXT *esysContext, ESYS_TR handle, TPM2B_NAME **name), \
      (esysContext, handle, name)) \
    X(TSS2_RC, Esys_TR_Close, (ESYS_CONTEXT *esys_context, ESYS_TR *rsrc_handle), (esys_context, rsrc_handle)) \
    X(TSS2_RC, Esys_TRSess_SetAttributes, (ESYS_CONTEXT *esysContext, ESYS_TR session, TPMA_SESSION flags, TPMA_SESSION mask), \
      (esysContext, session, flags, mask)) \
    XV(Esys_Free, (void *ptr), (ptr)) \
    /* libtss2-mu.so.0's, which ESAPI links: dlsym on ESAPI's handle finds it among its dependencies. */ \
    X(TSS2_RC, Tss2_MU_TPMT_PUBLIC_Unmarshal, \
      (uint8_t const buffer[], size_t buffer_size, size_t *offset, TPMT_PUBLIC *dest), \
      (buffer, buffer_size, offset, dest))


#endif
