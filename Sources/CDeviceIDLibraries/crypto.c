#include "CDeviceIDLibraries.h"
#include "dids_loader.h"
#include "CDeviceIDSystem.h"

DIDS_STATIC_POINTERS(DIDS_CRYPTO_FUNCTIONS)
DIDS_LOADABLE(dids_crypto_loadable, DIDS_CRYPTO_FUNCTIONS, "libcrypto.so.3",
              "libssl3 (libssl3t64 on Debian 13)", "OpenSSL 3.0");
DIDS_WRAPPERS(DIDS_CRYPTO_FUNCTIONS)

// The digests users ask for (dids_crypto_digest in dids_crypto.h).
#include <pthread.h>
#include <string.h>

struct fetched {
    const char *name;
    size_t size;
    pthread_once_t once;
    EVP_MD *md;        // NULL: OpenSSL's configuration refuses it
    int direct;        // MD5 served by OpenSSL's default provider: the one-shot MD5() computes it
};

static struct fetched md5 = {"MD5", 16, PTHREAD_ONCE_INIT, NULL, 0};
static struct fetched sha256 = {"SHA256", 32, PTHREAD_ONCE_INIT, NULL, 0};

static void fetch(struct fetched *f) {
    // A refusal queues an error on this thread's OpenSSL error queue, which is the caller's: dropped.
    dids_p_ERR_set_mark();
    f->md = dids_p_EVP_MD_fetch(NULL, f->name, NULL);
    dids_p_ERR_pop_to_mark();
    if (f->md == NULL || f != &md5) return;
    // SHA256() is not one: in OpenSSL 3 it is EVP_Q_digest, a fetch and a context per call.
    const OSSL_PROVIDER *provider = dids_p_EVP_MD_get0_provider(f->md);
    const char *name = provider != NULL ? dids_p_OSSL_PROVIDER_get0_name(provider) : NULL;
    f->direct = name != NULL && strcmp(name, "default") == 0;
}

static void fetch_md5(void) { fetch(&md5); }
static void fetch_sha256(void) { fetch(&sha256); }

// One EVP context per thread, reused (initialising one costs a third of a short digest), freed
// when the thread ends.
// Without a key (the process ran out of them), a context per call.
static pthread_key_t context_key;
static int have_context_key;
static pthread_once_t context_once = PTHREAD_ONCE_INIT;
static void free_context(void *context) { dids_p_EVP_MD_CTX_free(context); }
static void make_context_key(void) { have_context_key = pthread_key_create(&context_key, free_context) == 0; }

static EVP_MD_CTX *thread_context(void) {
    pthread_once(&context_once, make_context_key);
    if (!have_context_key) return NULL;
    EVP_MD_CTX *context = pthread_getspecific(context_key);
    if (context == NULL && (context = dids_p_EVP_MD_CTX_new()) != NULL && pthread_setspecific(context_key, context) != 0) {
        dids_p_EVP_MD_CTX_free(context);
        context = NULL;
    }
    return context;
}

static int digest(int algorithm, const void *data, size_t size, unsigned char *out) {
    struct fetched *f = algorithm == DIDS_DIGEST_MD5 ? &md5 : &sha256;
    pthread_once(&f->once, f == &md5 ? fetch_md5 : fetch_sha256);
    if (f->md == NULL) return DIDS_DIGEST_REFUSED;
    static const unsigned char empty = 0;
    const unsigned char *bytes = size == 0 ? &empty : data;
    if (f->direct) return dids_p_MD5(bytes, size, out) != NULL ? DIDS_DIGEST_OK : DIDS_DIGEST_FAILED;
    EVP_MD_CTX *kept = thread_context();
    EVP_MD_CTX *context = kept != NULL ? kept : dids_p_EVP_MD_CTX_new();
    if (context == NULL) return DIDS_DIGEST_NO_MEMORY;
    unsigned int length = 0;
    int ok = dids_p_EVP_DigestInit_ex2(context, f->md, NULL) == 1 && dids_p_EVP_DigestUpdate(context, bytes, size) == 1
        && dids_p_EVP_DigestFinal_ex(context, out, &length) == 1 && length == f->size;
    if (kept == NULL) dids_p_EVP_MD_CTX_free(context);
    return ok ? DIDS_DIGEST_OK : DIDS_DIGEST_FAILED;
}

// The fetch (a pthread_once a child forked during it would find in progress for good) and the
// digest, under the lock fork() waits for.
int dids_crypto_digest(int algorithm, const void *data, size_t size, unsigned char *out) {
    dids_computing_begin();
    int status = digest(algorithm, data, size, out);
    dids_computing_end();
    return status;
}

int dids_crypto_hex_digest(int algorithm, const void *data, size_t size, char *out) {
    static const char digits[] = "0123456789abcdef";
    unsigned char raw[32];
    int status = dids_crypto_digest(algorithm, data, size, raw);
    if (status != DIDS_DIGEST_OK) return status;
    size_t n = algorithm == DIDS_DIGEST_MD5 ? 16 : 32;
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[raw[i] >> 4];
        out[2 * i + 1] = digits[raw[i] & 15];
    }
    out[2 * n] = 0;
    return DIDS_DIGEST_OK;
}
