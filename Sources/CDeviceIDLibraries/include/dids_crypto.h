#ifndef DIDS_CRYPTO_H
#define DIDS_CRYPTO_H
// OpenSSL's libcrypto 3 (DIDS_LIBRARY_CRYPTO): the digests users ask for (MD5, SHA-256), so that
// OpenSSL's providers and policy (FIPS) apply to them, and AES-256-GCM sealing
// (Sources/DeviceID/Crypto). Each dids_X is X. Every function exists in OpenSSL 3.0 (Debian 12)
// and later. The types are opaque in OpenSSL 3, by their real struct tags; with
// DIDS_CHECK_AGAINST_REAL_HEADERS the real headers declare them (Tests/c/check_library_prototypes.c).
#include <stddef.h>

#define DIDS_EVP_CTRL_GCM_GET_TAG 0x10
#define DIDS_EVP_CTRL_GCM_SET_TAG 0x11
#define DIDS_EVP_MAX_MD_SIZE 64

#ifndef DIDS_CHECK_AGAINST_REAL_HEADERS
typedef struct evp_md_st EVP_MD;
typedef struct evp_md_ctx_st EVP_MD_CTX;
typedef struct evp_cipher_st EVP_CIPHER;
typedef struct evp_cipher_ctx_st EVP_CIPHER_CTX;
typedef struct engine_st ENGINE;
typedef struct ossl_lib_ctx_st OSSL_LIB_CTX;
typedef struct ossl_param_st OSSL_PARAM;
typedef struct ossl_provider_st OSSL_PROVIDER;
#endif

#define DIDS_CRYPTO_FUNCTIONS(X, XV) \
    X(int, ERR_set_mark, (void), ()) \
    X(int, ERR_pop_to_mark, (void), ()) \
    X(int, EVP_CIPHER_CTX_ctrl, (EVP_CIPHER_CTX *ctx, int type, int arg, void *ptr), (ctx, type, arg, ptr)) \
    XV(EVP_CIPHER_CTX_free, (EVP_CIPHER_CTX *ctx), (ctx)) \
    X(EVP_CIPHER_CTX *, EVP_CIPHER_CTX_new, (void), ()) \
    X(int, EVP_DecryptInit_ex, \
      (EVP_CIPHER_CTX *ctx, const EVP_CIPHER *cipher, ENGINE *impl, const unsigned char *key, const unsigned char *iv), \
      (ctx, cipher, impl, key, iv)) \
    X(int, EVP_DecryptUpdate, (EVP_CIPHER_CTX *ctx, unsigned char *out, int *outl, const unsigned char *in, int inl), \
      (ctx, out, outl, in, inl)) \
    X(int, EVP_DecryptFinal_ex, (EVP_CIPHER_CTX *ctx, unsigned char *outm, int *outl), (ctx, outm, outl)) \
    X(int, EVP_EncryptInit_ex, \
      (EVP_CIPHER_CTX *ctx, const EVP_CIPHER *cipher, ENGINE *impl, const unsigned char *key, const unsigned char *iv), \
      (ctx, cipher, impl, key, iv)) \
    X(int, EVP_EncryptUpdate, (EVP_CIPHER_CTX *ctx, unsigned char *out, int *outl, const unsigned char *in, int inl), \
      (ctx, out, outl, in, inl)) \
    X(int, EVP_EncryptFinal_ex, (EVP_CIPHER_CTX *ctx, unsigned char *out, int *outl), (ctx, out, outl)) \
    X(int, EVP_Digest, \
      (const void *data, size_t count, unsigned char *md, unsigned int *size, const EVP_MD *type, ENGINE *impl), \
      (data, count, md, size, type, impl)) \
    X(int, EVP_DigestInit_ex2, (EVP_MD_CTX *ctx, const EVP_MD *type, const OSSL_PARAM *params), (ctx, type, params)) \
    X(int, EVP_DigestUpdate, (EVP_MD_CTX *ctx, const void *d, size_t cnt), (ctx, d, cnt)) \
    X(int, EVP_DigestFinal_ex, (EVP_MD_CTX *ctx, unsigned char *md, unsigned int *s), (ctx, md, s)) \
    XV(EVP_MD_CTX_free, (EVP_MD_CTX *ctx), (ctx)) \
    X(EVP_MD_CTX *, EVP_MD_CTX_new, (void), ()) \
    X(EVP_MD *, EVP_MD_fetch, (OSSL_LIB_CTX *ctx, const char *algorithm, const char *properties), \
      (ctx, algorithm, properties)) \
    X(const EVP_CIPHER *, EVP_aes_256_gcm, (void), ()) \
    X(const OSSL_PROVIDER *, EVP_MD_get0_provider, (const EVP_MD *md), (md)) \
    X(const char *, OSSL_PROVIDER_get0_name, (const OSSL_PROVIDER *prov), (prov)) \
    X(unsigned char *, MD5, (const unsigned char *d, size_t n, unsigned char *md), (d, n, md))

#ifndef DIDS_CHECK_AGAINST_REAL_HEADERS
#define DIDS_CRYPTO_DECLARE(ret, name, params, args) ret dids_##name params;
#define DIDS_CRYPTO_DECLARE_VOID(name, params, args) void dids_##name params;
DIDS_CRYPTO_FUNCTIONS(DIDS_CRYPTO_DECLARE, DIDS_CRYPTO_DECLARE_VOID)
#undef DIDS_CRYPTO_DECLARE
#undef DIDS_CRYPTO_DECLARE_VOID

/// The digests users ask for, by DeviceID's numbers (DEVICEID_HASH_MD5 = 1, DEVICEID_HASH_SHA256 = 2).
enum { DIDS_DIGEST_MD5 = 1, DIDS_DIGEST_SHA256 = 2 };
enum {
    DIDS_DIGEST_OK = 0,
    DIDS_DIGEST_REFUSED = -1,   /* OpenSSL's configuration offers no such digest (MD5 under FIPS) */
    DIDS_DIGEST_FAILED = -2,    /* a libcrypto call failed */
    DIDS_DIGEST_NO_MEMORY = -3,
};

/// The digest of `size` bytes at `data` into `out` (16 or 32 bytes), once libcrypto is loaded.
///
/// Whether the digest may be used is OpenSSL's decision, as for any EVP caller: it is fetched
/// (EVP_MD_fetch, the default library context and properties, so FIPS mode and provider
/// configuration apply) once per process, and refused if that fails. When MD5 is served by
/// OpenSSL's own "default" provider, the one-shot MD5() computes it — the same code, without EVP's
/// dispatch, which costs 1.4x the digest itself on short input (measured: 27 bytes, OpenSSL 3.0).
/// Otherwise (SHA-256, whose one-shot is itself EVP in OpenSSL 3; the FIPS provider; a
/// third-party one) EVP does, with a context per thread.
int dids_crypto_digest(int algorithm, const void *data, size_t size, unsigned char *out);

/// As dids_crypto_digest, written as lowercase hex with a NUL (33 or 65 bytes).
int dids_crypto_hex_digest(int algorithm, const void *data, size_t size, char *out);

/// libcrypto's work is done between dids_computing_begin and _end (CDeviceIDSystem.h), which
/// fork() waits for; dids_crypto_digest takes it itself.
#endif

#endif
