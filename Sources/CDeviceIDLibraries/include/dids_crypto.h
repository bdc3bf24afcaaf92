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
    X(const EVP_CIPHER *, EVP_aes_256_gcm, (void), ())

#ifndef DIDS_CHECK_AGAINST_REAL_HEADERS
#define DIDS_CRYPTO_DECLARE(ret, name, params, args) ret dids_##name params;
#define DIDS_CRYPTO_DECLARE_VOID(name, params, args) void dids_##name params;
DIDS_CRYPTO_FUNCTIONS(DIDS_CRYPTO_DECLARE, DIDS_CRYPTO_DECLARE_VOID)
#undef DIDS_CRYPTO_DECLARE
#undef DIDS_CRYPTO_DECLARE_VOID
#endif

#endif
