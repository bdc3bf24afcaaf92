/* libFuzzer over every conversation DeviceID has with a TPM, through the C ABI: the input's bytes
 * are the TPM's answers. The library is the shipped configuration (Embedded Swift) built with
 * -DDIDS_FUZZ_TPM, whose swtpm transport reads its answers from dids_fuzz_tpm_read below
 * (Sources/CDeviceIDTPM/transports/tcti_fuzz.c), so that the C session code, tpm2-tss's ESAPI and
 * the Swift above them (names, IDs, evidence, CBOR, the seal) all take what the fuzzer sends.
 *
 *   input: OP (1 byte) | N (2 bytes, big-endian) | N bytes of the caller's text | the answers
 *
 * OP chooses the call (OP % 128 % 9, see below) and, with its high bit, password sessions in
 * place of the salted one (DEVICEID_FUZZ_TPM_UNSALTED, Sources/CDeviceIDTPM/transports/tcti.h):
 * under the salted session an answer the fuzzer changed fails its HMAC in ESAPI, and only without
 * it do changed answers to CreatePrimary, Certify, Sign, ActivateCredential and the ECDH commands
 * reach the code that reads them. The text is the CA's challenge or AK certificate message where
 * the call takes one. The answers are the TPM's, each a response header and as many bytes as it
 * says, back to back: a conversation recorded from swtpm (Tests/fuzz/tpm/record) is an input.
 * OpenSSL's randomness starts again at each input (same_randomness.c), so that such a recording's
 * salted sessions replay. With DEVICEID_FUZZ_TPM_SHOW set, each input's outcome goes to stderr:
 * `scripts/fuzz tpm check` holds every seed to replaying whole (status 0, every answer read).
 *
 * The mutator knows the framing (LLVMFuzzerCustomMutator below): a byte inserted into or taken
 * from an answer moves every answer after it, which libFuzzer's own mutations would do to nearly
 * every input, and a TPM2B or a count grown in place needs its answer grown with it. So it
 * mutates one answer at a time (or the caller's text) and writes the answer's size into its
 * header; one mutation in eight is libFuzzer's over the whole input, header sizes included.
 *
 *   scripts/fuzz tpm 60
 */
#include <deviceid.h>

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define APP "org.example.fuzz"

void dids_fuzz_same_randomness(void);

static const uint8_t *answers;
static size_t answers_left;

/* What the fuzz transport reads: the TPM's next bytes. */
size_t dids_fuzz_tpm_read(uint8_t *buffer, size_t size) {
    size_t n = size < answers_left ? size : answers_left;
    memcpy(buffer, answers, n);
    answers += n;
    answers_left -= n;
    return n;
}

static char dir[] = "/tmp/deviceid-fuzz.XXXXXX";

/* Each input meets the TPM for the first time: the pin (docs/STATE.md, "TPM pins") an earlier
 * input's salting key left in the store (a state-… file; nothing else writes one here) would
 * refuse every other key before its session started. An input of several conversations (a seal,
 * then its opening) still checks its second salting key against the pin of its first. */
static void forget_pins(void) {
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));)
        if (strncmp(e->d_name, "state-", 6) == 0) unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    if (!mkdtemp(dir)) abort();
    setenv("DEVICEID_STORE_DIR", dir, 1);
    setenv("DEVICEID_TPM_TCTI", "swtpm:path=/fuzz", 1); /* any path: the fuzz transport has none */
    unsetenv("DBUS_SESSION_BUS_ADDRESS"); /* no keyring: the file store only */
    unsetenv("DISPLAY");
    if (deviceid_set_backend(NULL, DEVICEID_BACKEND_FILE) != 0) abort();
    return 0;
}

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

#define HEAD 3      /* OP, N */
#define HEADER 10   /* an answer's tag, size, code */
#define LARGEST 4096
#define PARTS 64

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

/* Mutates the text or one answer of an input framed as LLVMFuzzerTestOneInput reads it, and
 * writes that part's new size where its framing says it; libFuzzer's mutation of the whole input
 * where the input is not so framed, or one time in eight. */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
    if (size < HEAD || seed % 8 == 0) return LLVMFuzzerMutate(data, size, max_size);
    size_t text = (size_t)data[1] << 8 | data[2];
    if (text > size - HEAD) return LLVMFuzzerMutate(data, size, max_size);
    /* Parts: [start, end) of the text, then of each whole answer; the rest stays as it is. */
    size_t start[PARTS], end[PARTS], parts = 0, at = HEAD + text;
    start[parts] = HEAD, end[parts++] = at;
    while (parts < PARTS && size - at >= HEADER) {
        uint32_t length = be32(data + at + 2);
        if (length < HEADER || length > LARGEST || length > size - at) break;
        start[parts] = at, end[parts++] = at + length;
        at += length;
    }
    size_t k = parts > 1 && seed % 16 != 1 ? 1 + (seed >> 4) % (parts - 1) : 0;
    if (k == 0 && seed % 64 == 1) data[0] ^= 0x80;  /* now and then, the other kind of session */
    size_t old = end[k] - start[k], room = k ? LARGEST : 0xffff;
    if (max_size - size + old < room) room = max_size - size + old;
    if (room < (k ? HEADER : 0)) return LLVMFuzzerMutate(data, size, max_size);
    static uint8_t part[0xffff];
    memcpy(part, data + start[k], old);
    /* An answer's tag and code are mutated with its body; its size is set below. */
    size_t grown = LLVMFuzzerMutate(part, old, room);
    if (k && grown < HEADER) grown = HEADER;
    memmove(data + start[k] + grown, data + end[k], size - end[k]);
    memcpy(data + start[k], part, grown);
    if (k) {
        data[start[k] + 2] = (uint8_t)(grown >> 24), data[start[k] + 3] = (uint8_t)(grown >> 16);
        data[start[k] + 4] = (uint8_t)(grown >> 8), data[start[k] + 5] = (uint8_t)grown;
    } else {
        data[1] = (uint8_t)(grown >> 8), data[2] = (uint8_t)grown;
    }
    return size - old + grown;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 3) return 0;
    uint8_t op = (uint8_t)(data[0] & 0x7f);
    if (data[0] & 0x80) setenv("DEVICEID_FUZZ_TPM_UNSALTED", "1", 1);
    else unsetenv("DEVICEID_FUZZ_TPM_UNSALTED");
    size_t text_size = (size_t)data[1] << 8 | data[2];
    if (text_size > size - 3) text_size = size - 3;
    char *text = malloc(text_size + 1);
    memcpy(text, data + 3, text_size);
    text[text_size] = '\0';
    answers = data + 3 + text_size;
    answers_left = size - 3 - text_size;
    dids_fuzz_same_randomness();
    forget_pins();

    static const unsigned char nonce[32] = "a nonce the server chose, 32 B.";
    char id[DEVICEID_UUID_STRING_MAX], *out = NULL;
    void *secret = NULL;
    size_t secret_size = 0;
    deviceid_environment environment;
    int r = 0;
    switch (op % 9) {
    case 0: r = deviceid_hardware_id(NULL, APP, id, sizeof id); break;
    case 1: r = deviceid_attest_enrolment(NULL, APP, &out); break;
    case 2: r = deviceid_attest_activate(NULL, APP, text, &out); break;
    case 3: r = deviceid_attest(NULL, APP, nonce, sizeof nonce, text_size ? text : NULL, &out); break;
    case 4: r = deviceid_attest_webauthn(NULL, APP, nonce, sizeof nonce, text_size ? text : NULL, &out); break;
    case 5: r = deviceid_assert(NULL, APP, nonce, sizeof nonce, &out); break;
    case 6:
        /* This-device-only: sealed through the binding key (ECDH_KeyGen), then opened (ECDH_ZGen). */
        deviceid_set_protection(NULL, DEVICEID_PROTECTION_THIS_DEVICE_ONLY);
        if ((r = deviceid_secret_store(NULL, "fuzz", "account", nonce, sizeof nonce)) == 0
            && (r = deviceid_secret_lookup(NULL, "fuzz", "account", &secret, &secret_size)) == 0) {
            if (secret_size != sizeof nonce || memcmp(secret, nonce, sizeof nonce) != 0) abort();
            deviceid_free(secret);
        }
        deviceid_set_protection(NULL, DEVICEID_PROTECTION_PORTABLE);
        deviceid_secret_delete(NULL, "fuzz", "account");
        break;
    case 7:
        /* The binding in force: the TPM asked for its binding key. */
        deviceid_set_protection(NULL, DEVICEID_PROTECTION_THIS_DEVICE_ONLY);
        r = deviceid_get_environment(NULL, &environment, sizeof environment);
        deviceid_set_protection(NULL, DEVICEID_PROTECTION_PORTABLE);
        break;
    case 8:
        /* A this-device-only identifier: minted and sealed, then read back (opened). */
        deviceid_set_protection(NULL, DEVICEID_PROTECTION_THIS_DEVICE_ONLY);
        if ((r = deviceid_identifier(NULL, DEVICEID_SCOPE_APP, APP, id, sizeof id, NULL, NULL)) == 0)
            r = deviceid_identifier(NULL, DEVICEID_SCOPE_APP, APP, id, sizeof id, NULL, NULL);
        deviceid_set_protection(NULL, DEVICEID_PROTECTION_PORTABLE);
        deviceid_identifier_reset(NULL, DEVICEID_SCOPE_APP, APP);
        break;
    }
    if (getenv("DEVICEID_FUZZ_TPM_SHOW"))
        fprintf(stderr, "op %u: status %d, %zu bytes of answers unread: %s\n", op % 9u, r, answers_left,
                deviceid_last_error());
    deviceid_free(out);
    free(text);
    return 0;
}
