/* The same randomness in every run, for OpenSSL's callers in this process (tpm2-tss's ESAPI among
 * them): RAND_set_rand_method with a counter's SHA-256 stream, started again by
 * dids_fuzz_same_randomness(). ESAPI salts each conversation's session with an ephemeral ECDH key
 * and its own nonces, which key the HMAC over every answer: with other random bytes than a
 * recording had, the recorded answers fail their HMAC (RSP_AUTH_FAILED) at the first command under
 * the session and nothing past it is reached. So the recorder (Tests/fuzz/tpm/record) and the
 * harness (fuzz_tpm.c) both draw from this stream, started at each call, and a recorded
 * conversation replays whole. Compiled into the harness, and by the recorder into a library of its
 * own. DeviceID's own randomness (CDeviceIDPrimitives) is not OpenSSL's and stays random.
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <stdint.h>
#include <string.h>

static uint64_t counter;

static int bytes(unsigned char *buffer, int size) {
    while (size > 0) {
        unsigned char block[SHA256_DIGEST_LENGTH], seed[sizeof counter];
        memcpy(seed, &counter, sizeof counter);
        counter++;
        SHA256(seed, sizeof seed, block);
        int n = size < (int)sizeof block ? size : (int)sizeof block;
        memcpy(buffer, block, (size_t)n);
        buffer += n;
        size -= n;
    }
    return 1;
}

static int seed(const void *buffer, int size) { (void)buffer, (void)size; return 1; }
static int add(const void *buffer, int size, double entropy) { (void)buffer, (void)size, (void)entropy; return 1; }
static int status(void) { return 1; }

static RAND_METHOD same = {seed, bytes, NULL, add, bytes, status};

/* Installs the stream (once) and starts it again. */
void dids_fuzz_same_randomness(void) {
    if (RAND_get_rand_method() != &same) RAND_set_rand_method(&same);
    counter = 0;
}
