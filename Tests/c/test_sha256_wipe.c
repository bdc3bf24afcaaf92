/* sha256.c wipes its working state (message schedule, context, HMAC key block, pads, inner digest)
 * with explicit_bzero, which the optimizer may not remove; a memset of memory about to die it may.
 * Built at -O2 together with Sources/CDeviceIDPrimitives/sha256.c, this program defines explicit_bzero
 * itself, so the calls land here and are counted. The digests are checked too (FIPS 180-2 "abc",
 * RFC 4231 test case 1); the full vectors are in Tests/DeviceIDTests/Crypto/KnownAnswerTests.swift.
 *
 *   cc -O2 -U_FORTIFY_SOURCE -ISources/CDeviceIDPrimitives/include Tests/c/test_sha256_wipe.c \
 *       Sources/CDeviceIDPrimitives/sha256.c -o test_sha256_wipe && ./test_sha256_wipe
 */
#include "CDeviceIDSHA256.h"

#include <stdio.h>
#include <string.h>

static size_t wiped[64];
static int wipes;

void explicit_bzero(void *s, size_t n) {
    if (wipes < 64) wiped[wipes] = n;
    wipes++;
    volatile unsigned char *p = s;
    while (n) p[--n] = 0;
}

static int failures;

static void check(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "FAIL: %s\n", what);
        failures++;
    }
}

static int count(size_t size) {
    int n = 0;
    for (int i = 0; i < wipes && i < 64; i++) n += wiped[i] == size;
    return n;
}

static void hex(const uint8_t *bytes, size_t size, char *out) {
    for (size_t i = 0; i < size; i++) sprintf(out + 2 * i, "%02x", bytes[i]);
}

int main(void) {
    uint8_t out[32];
    char text[65];

    wipes = 0;
    dids_sha256("abc", 3, out);
    hex(out, 32, text);
    check(strcmp(text, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0, "SHA-256(abc)");
    /* One block: the message schedule (64 words) once, the context once. */
    check(count(64 * sizeof(uint32_t)) == 1, "sha256: the message schedule is wiped");
    check(count(sizeof(dids_sha256_ctx)) == 1, "sha256: the context is wiped");

    uint8_t key[20];
    memset(key, 0x0b, sizeof key);
    wipes = 0;
    dids_hmac_sha256(key, sizeof key, "Hi There", 8, out);
    hex(out, 32, text);
    check(strcmp(text, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7") == 0, "RFC 4231 #1");
    /* Inner and outer hash: two blocks each, two contexts; then the key block and pad (64 bytes
     * each) and the inner digest (32). */
    check(count(64 * sizeof(uint32_t)) == 4, "hmac: every message schedule is wiped");
    check(count(sizeof(dids_sha256_ctx)) == 2, "hmac: both contexts are wiped");
    check(count(64) == 2, "hmac: the key block and the pad are wiped");
    check(count(32) == 1, "hmac: the inner digest is wiped");

    if (failures) return 1;
    printf("sha256 wipe: 9 passed\n");
    return 0;
}
