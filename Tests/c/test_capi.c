/* The C ABI as a C caller sees it, built with -Wall -Wextra -Werror through pkg-config against
 * the installed prefix. Every bad input must come back as its status, never as a crash.
 *
 *   test_capi STORE_DIR     (uses the file backend in STORE_DIR, then auto)
 */
#include <deviceid.h>
#include <deviceid-techniques.h>

#include <glob.h>
#include <pthread.h>
#include <sys/wait.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static int passed, failed;

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (cond) {                                                                 \
            passed++;                                                               \
        } else {                                                                    \
            failed++;                                                               \
            fprintf(stderr, "%s:%d: FAILED: %s (last error: %s)\n", __FILE__,       \
                    __LINE__, #cond, deviceid_last_error());                        \
        }                                                                           \
    } while (0)

#define CHECK_STATUS(expr, expected) CHECK((expr) == (expected))

static int is_canonical_uuid(const char *s) {
    if (strlen(s) != 36) return 0;
    for (int i = 0; i < 36; i++) {
        char c = s[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-') return 0;
        } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return 0;
        }
    }
    return s[14] == '4' && strchr("89ab", s[19]) != NULL;
}

static void test_constants(void) {
    char expected[32];
    snprintf(expected, sizeof expected, "%d.%d.%d", DEVICEID_VERSION_MAJOR, DEVICEID_VERSION_MINOR,
             DEVICEID_VERSION_PATCH);
    CHECK(strcmp(deviceid_version(), DEVICEID_VERSION_STRING) == 0);
    CHECK(strcmp(deviceid_version(), expected) == 0);

    static const struct { int status; const char *name; } statuses[] = {
        {DEVICEID_OK, "OK"}, {DEVICEID_E_INVALID_ARGUMENT, "INVALID_ARGUMENT"},
        {DEVICEID_E_BUFFER_TOO_SMALL, "BUFFER_TOO_SMALL"}, {DEVICEID_E_NOT_FOUND, "NOT_FOUND"},
        {DEVICEID_E_LOCKED, "LOCKED"}, {DEVICEID_E_UNAVAILABLE, "UNAVAILABLE"},
        {DEVICEID_E_TIMED_OUT, "TIMED_OUT"}, {DEVICEID_E_CORRUPT, "CORRUPT"}, {DEVICEID_E_IO, "IO"},
        {DEVICEID_E_PERMISSION, "PERMISSION"}, {DEVICEID_E_NO_MEMORY, "NO_MEMORY"},
        {DEVICEID_E_TOO_LARGE, "TOO_LARGE"}, {DEVICEID_E_UNSUPPORTED, "UNSUPPORTED"},
        {DEVICEID_E_KEYRING, "KEYRING"}, {DEVICEID_E_OPTED_OUT, "OPTED_OUT"},
        {DEVICEID_E_INTERNAL, "INTERNAL"}, {DEVICEID_E_INVALID_MACHINE_ID, "INVALID_MACHINE_ID"},
        {DEVICEID_E_NO_COLLECTION, "NO_COLLECTION"}, {DEVICEID_E_NO_KEYRING, "NO_KEYRING"},
    };
    size_t n = sizeof statuses / sizeof statuses[0];
    for (size_t i = 0; i < n; i++) {
        CHECK(strcmp(deviceid_status_name(statuses[i].status), statuses[i].name) == 0);
        CHECK(strcmp(deviceid_strerror(statuses[i].status), "unknown status") != 0);
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(deviceid_strerror(statuses[i].status), deviceid_strerror(statuses[j].status)) != 0);
    }
    CHECK(strcmp(deviceid_strerror(-9999), "unknown status") == 0);
    CHECK(strcmp(deviceid_strerror(INT32_MIN), "unknown status") == 0);
    CHECK(strcmp(deviceid_status_name(12345), "UNKNOWN") == 0);
    CHECK(strcmp(deviceid_source_name(DEVICEID_SOURCE_KEYRING), "keyring") == 0);
    CHECK(strcmp(deviceid_source_name(DEVICEID_SOURCE_FILE), "file") == 0);
    CHECK(strcmp(deviceid_source_name(DEVICEID_SOURCE_CREATED), "created") == 0);
    CHECK(strcmp(deviceid_source_name(0), "unknown") == 0);
}

static void test_configuration(const char *dir) {
    CHECK_STATUS(deviceid_set_backend(NULL, 3), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_set_backend(NULL, -1), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_set_timeout_ms(NULL, 0), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_set_timeout_ms(NULL, 86400001u), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_set_timeout_ms(NULL, 3000), DEVICEID_OK);
    unsigned int timeout = 0;
    CHECK_STATUS(deviceid_get_timeout_ms(NULL, NULL), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_get_timeout_ms(NULL, &timeout), DEVICEID_OK);
    CHECK(timeout == 3000);
    CHECK_STATUS(deviceid_get_interactive(NULL), 0);
    CHECK_STATUS(deviceid_set_interactive(NULL, 2, 0), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_set_interactive(NULL, -1, 0), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_set_interactive(NULL, 1, 86400001u), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_get_interactive(NULL), 0);
    CHECK_STATUS(deviceid_set_interactive(NULL, 1, 0), DEVICEID_OK);
    CHECK_STATUS(deviceid_get_interactive(NULL), 1);
    CHECK_STATUS(deviceid_set_interactive(NULL, 0, 1000), DEVICEID_OK);
    CHECK_STATUS(deviceid_get_interactive(NULL), 0);
    CHECK_STATUS(deviceid_set_store_dir(NULL, "relative/path"), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_set_store_dir(NULL, "\xff\xfe"), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_set_store_dir(NULL, NULL), DEVICEID_OK);
    /* The override rule: an invalid variable fails calls until an override replaces it; variables
       nothing overrides keep applying. */
    setenv("DEVICEID_BACKEND", "bogus", 1);
    CHECK_STATUS(deviceid_set_store_dir(NULL, dir), DEVICEID_OK);
    CHECK_STATUS(deviceid_get_backend(NULL), DEVICEID_E_INVALID_ARGUMENT);
    CHECK(strstr(deviceid_last_error(), "DEVICEID_BACKEND=bogus") != NULL);
    CHECK_STATUS(deviceid_set_backend(NULL, DEVICEID_BACKEND_FILE), DEVICEID_OK);
    CHECK_STATUS(deviceid_get_backend(NULL), DEVICEID_BACKEND_FILE);
    unsetenv("DEVICEID_BACKEND");
}

static void test_get_bad_input(void) {
    char out[DEVICEID_UUID_STRING_MAX];
    char *huge = malloc(1 << 20);
    memset(huge, 'a', (1 << 20) - 1);
    huge[(1 << 20) - 1] = '\0';
    char long256[257];
    memset(long256, 'b', 256);
    long256[256] = '\0';

    memset(out, 'X', sizeof out);
    CHECK_STATUS(deviceid_get(NULL, out, sizeof out), DEVICEID_E_INVALID_ARGUMENT);
    CHECK(out[0] == 'X');
    CHECK_STATUS(deviceid_get("", out, sizeof out), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_get("\xff\xfe", out, sizeof out), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_get("\xc3", out, sizeof out), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_get("tab\there", out, sizeof out), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_get(huge, out, sizeof out), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_get(long256, out, sizeof out), DEVICEID_E_INVALID_ARGUMENT);
    CHECK(strstr(deviceid_last_error(), "longer than 255") != NULL);
    CHECK_STATUS(deviceid_get("com.example.c", NULL, sizeof out), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_get("com.example.c", out, 0), DEVICEID_E_BUFFER_TOO_SMALL);
    CHECK_STATUS(deviceid_get("com.example.c", out, DEVICEID_UUID_STRING_MAX - 1), DEVICEID_E_BUFFER_TOO_SMALL);
    CHECK(out[0] == 'X');
    CHECK_STATUS(deviceid_reset(NULL), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_reset(""), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_reset(huge), DEVICEID_E_INVALID_ARGUMENT);
    long256[255] = '\0';
    CHECK_STATUS(deviceid_get(long256, out, sizeof out), DEVICEID_OK);
    free(huge);
}

static void test_get(void) {
    char a[DEVICEID_UUID_STRING_MAX], b[64], c[DEVICEID_UUID_STRING_MAX];
    int source = -1;
    CHECK_STATUS(deviceid_reset("com.example.c"), DEVICEID_OK);
    CHECK_STATUS(deviceid_identifier(NULL, DEVICEID_SCOPE_APP, "com.example.c", a, sizeof a, &source, NULL), DEVICEID_OK);
    CHECK(is_canonical_uuid(a));
    CHECK(source == DEVICEID_SOURCE_CREATED);
    CHECK_STATUS(deviceid_identifier(NULL, DEVICEID_SCOPE_APP, "com.example.c", b, SIZE_MAX, NULL, NULL), DEVICEID_OK);
    CHECK(strcmp(a, b) == 0);
    CHECK_STATUS(deviceid_get("com.example.other", c, sizeof c), DEVICEID_OK);
    CHECK(strcmp(a, c) != 0);
    CHECK_STATUS(deviceid_reset("com.example.c"), DEVICEID_OK);
    CHECK_STATUS(deviceid_get("com.example.c", b, sizeof b), DEVICEID_OK);
    CHECK(strcmp(a, b) != 0);
    CHECK_STATUS(deviceid_reset("never.existed"), DEVICEID_OK);
}

static void test_secrets(void) {
    const unsigned char value[] = {'a', 0, 'b', 0xff, 0};
    void *data = (void *)0x1;
    size_t size = 99;
    CHECK_STATUS(deviceid_secret_store(NULL, NULL, "acct", value, sizeof value), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_secret_store(NULL, "svc", NULL, value, sizeof value), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_secret_store(NULL, "svc", "acct", NULL, 1), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_secret_store(NULL, "svc", "acct", value, SIZE_MAX), DEVICEID_E_TOO_LARGE);
    CHECK_STATUS(deviceid_secret_store(NULL, "svc", "acct", value, DEVICEID_SECRET_MAX + 1), DEVICEID_E_TOO_LARGE);
    CHECK_STATUS(deviceid_secret_store(NULL, "deviceid.app", "acct", value, 1), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_secret_lookup(NULL, "svc", "acct", NULL, &size), DEVICEID_E_INVALID_ARGUMENT);
    CHECK(size == 0);
    CHECK_STATUS(deviceid_secret_lookup(NULL, "svc", "acct", &data, NULL), DEVICEID_E_INVALID_ARGUMENT);
    CHECK(data == NULL);
    CHECK_STATUS(deviceid_secret_delete(NULL, "svc", ""), DEVICEID_E_INVALID_ARGUMENT);

    deviceid_secret_delete(NULL, "svc", "acct");
    CHECK_STATUS(deviceid_secret_lookup(NULL, "svc", "acct", &data, &size), DEVICEID_E_NOT_FOUND);
    CHECK(data == NULL && size == 0);
    CHECK_STATUS(deviceid_secret_store(NULL, "svc", "acct", value, sizeof value), DEVICEID_OK);
    CHECK_STATUS(deviceid_secret_lookup(NULL, "svc", "acct", &data, &size), DEVICEID_OK);
    CHECK(size == sizeof value && data != NULL && memcmp(data, value, size) == 0);
    CHECK(data != NULL && ((unsigned char *)data)[size] == 0);
    deviceid_free(data);
    CHECK_STATUS(deviceid_secret_store(NULL, "svc", "acct", NULL, 0), DEVICEID_OK);
    CHECK_STATUS(deviceid_secret_lookup(NULL, "svc", "acct", &data, &size), DEVICEID_OK);
    CHECK(size == 0 && data != NULL);
    deviceid_free(data);
    CHECK_STATUS(deviceid_secret_delete(NULL, "svc", "acct"), DEVICEID_OK);
    CHECK_STATUS(deviceid_secret_delete(NULL, "svc", "acct"), DEVICEID_E_NOT_FOUND);
    deviceid_free(NULL);
}

static void test_uuids_and_digests(void) {
    char out[DEVICEID_UUID_STRING_MAX], again[DEVICEID_UUID_STRING_MAX];
    unsigned char bytes[16];
    CHECK_STATUS(deviceid_uuid_generate(NULL, sizeof out, 0), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_uuid_generate(out, 36, 0), DEVICEID_E_BUFFER_TOO_SMALL);
    CHECK_STATUS(deviceid_uuid_generate(out, sizeof out, 4), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_uuid_generate(out, 33, DEVICEID_FORMAT_COMPACT), DEVICEID_OK);
    CHECK(strlen(out) == 32);
    CHECK_STATUS(deviceid_uuid_generate(out, sizeof out, 0), DEVICEID_OK);
    CHECK(is_canonical_uuid(out));
    CHECK_STATUS(deviceid_uuid_parse(out, bytes), DEVICEID_OK);
    CHECK(bytes[6] >> 4 == 4);
    CHECK_STATUS(deviceid_uuid_format(bytes, 0, again, sizeof again), DEVICEID_OK);
    CHECK(strcmp(out, again) == 0);
    CHECK_STATUS(deviceid_uuid_format(bytes, DEVICEID_FORMAT_UPPERCASE, again, sizeof again), DEVICEID_OK);
    CHECK(strcasecmp(out, again) == 0 && strcmp(out, again) != 0);
    CHECK_STATUS(deviceid_uuid_format(bytes, 0, again, 36), DEVICEID_E_BUFFER_TOO_SMALL);
    CHECK_STATUS(deviceid_uuid_format(NULL, 0, again, sizeof again), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_uuid_parse(NULL, bytes), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_uuid_parse(out, NULL), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_uuid_parse("{1b4e28ba-2fa1-4d2b-883f-0016d3cca427}", bytes), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_uuid_parse("1b4e28ba-2fa1-4d2b-883f-0016d3cca4277", bytes), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_uuid_parse("\xff\xfe", bytes), DEVICEID_E_INVALID_ARGUMENT);

    char md5[DEVICEID_MD5_HEX_MAX], sha[DEVICEID_SHA256_HEX_MAX];
    /* RFC 1321 and FIPS 180-2 "abc". */
    CHECK_STATUS(deviceid_hash_hex(DEVICEID_HASH_MD5, "abc", 3, md5, sizeof md5), DEVICEID_OK);
    CHECK(strcmp(md5, "900150983cd24fb0d6963f7d28e17f72") == 0);
    CHECK_STATUS(deviceid_hash_hex(DEVICEID_HASH_SHA256, "abc", 3, sha, sizeof sha), DEVICEID_OK);
    CHECK(strcmp(sha, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0);
    CHECK_STATUS(deviceid_hash_hex(DEVICEID_HASH_MD5, NULL, 0, md5, sizeof md5), DEVICEID_OK);
    CHECK(strcmp(md5, "d41d8cd98f00b204e9800998ecf8427e") == 0);
    CHECK_STATUS(deviceid_hash_hex(DEVICEID_HASH_SHA256, "abc", 3, sha, 64), DEVICEID_E_BUFFER_TOO_SMALL);
    CHECK_STATUS(deviceid_hash_hex(3, "abc", 3, sha, sizeof sha), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_hash_hex(DEVICEID_HASH_MD5, NULL, 5, md5, sizeof md5), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_hash_hex(DEVICEID_HASH_MD5, "x", SIZE_MAX, md5, sizeof md5), DEVICEID_E_TOO_LARGE);
    CHECK_STATUS(deviceid_token_hash(DEVICEID_HASH_MD5, "tok", 3, "com.x", md5, sizeof md5), DEVICEID_OK);
    char expected[DEVICEID_MD5_HEX_MAX];
    CHECK_STATUS(deviceid_hash_hex(DEVICEID_HASH_MD5, "tokcom.x", 8, expected, sizeof expected), DEVICEID_OK);
    CHECK(strcmp(md5, expected) == 0);
    CHECK_STATUS(deviceid_token_hash(DEVICEID_HASH_MD5, "tok", 3, NULL, md5, sizeof md5), DEVICEID_E_INVALID_ARGUMENT);

    char mac[DEVICEID_MAC_STRING_MAX], ifname[DEVICEID_INTERFACE_NAME_MAX];
    unsigned props = 99;
    CHECK_STATUS(deviceid_mac_address("../etc", 0, mac, sizeof mac, NULL, 0, NULL), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_mac_address("", 0, mac, sizeof mac, NULL, 0, NULL), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_mac_address("sixteen-chars-xx", 0, mac, sizeof mac, NULL, 0, NULL), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_mac_address("nosuchif0", 0, mac, sizeof mac, NULL, 0, NULL), DEVICEID_E_NOT_FOUND);
    CHECK_STATUS(deviceid_mac_address(NULL, 0, mac, 17, NULL, 0, NULL), DEVICEID_E_BUFFER_TOO_SMALL);
    CHECK_STATUS(deviceid_mac_address(NULL, 8, mac, sizeof mac, NULL, 0, NULL), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_mac_address(NULL, 0, NULL, sizeof mac, NULL, 0, NULL), DEVICEID_E_INVALID_ARGUMENT);
    int r = deviceid_mac_address(NULL, 0, mac, sizeof mac, ifname, sizeof ifname, &props);
    CHECK(r == DEVICEID_OK || r == DEVICEID_E_NOT_FOUND);
    if (r == DEVICEID_OK) {
        char path[64];
        snprintf(path, sizeof path, "/sys/class/net/%s/device", ifname);
        FILE *f = fopen(path, "r");
        CHECK(f != NULL); /* a device-backed interface */
        if (f) fclose(f);
        CHECK(strlen(mac) == 17 && mac[2] == ':');
        /* The weak flag is the locally administered bit of the address itself. */
        CHECK(((props & DEVICEID_MAC_WEAK) != 0) == ((strtol(mac, NULL, 16) & 0x02) != 0));
        /* Asking for the chosen interface by name gives the same answer; the compact form is the same digits. */
        char again[DEVICEID_MAC_STRING_MAX], compact[DEVICEID_MAC_STRING_MAX], digits[13];
        unsigned again_props = 99;
        CHECK_STATUS(deviceid_mac_address(ifname, 0, again, sizeof again, NULL, 0, &again_props), DEVICEID_OK);
        CHECK(strcmp(again, mac) == 0 && again_props == props);
        CHECK_STATUS(deviceid_mac_address(NULL, DEVICEID_FORMAT_COMPACT, compact, sizeof compact, NULL, 0, NULL), DEVICEID_OK);
        for (int i = 0, j = 0; i < 17; i++) if (mac[i] != ':') digits[j++] = mac[i];
        digits[12] = '\0';
        CHECK(strcmp(compact, digits) == 0);
        /* MD5(MAC + bundle id) is MD5 over those 12 digits followed by the bundle id. */
        char md5mac[DEVICEID_MD5_HEX_MAX], expected_md5[DEVICEID_MD5_HEX_MAX], input[64];
        unsigned md5_props = 99;
        CHECK_STATUS(deviceid_mac_md5(ifname, "com.x", md5mac, sizeof md5mac, &md5_props), DEVICEID_OK);
        snprintf(input, sizeof input, "%scom.x", digits);
        CHECK_STATUS(deviceid_hash_hex(DEVICEID_HASH_MD5, input, strlen(input), expected_md5, sizeof expected_md5), DEVICEID_OK);
        CHECK(strcmp(md5mac, expected_md5) == 0 && md5_props == props);
        CHECK_STATUS(deviceid_mac_md5(ifname, NULL, md5mac, 32, NULL), DEVICEID_E_BUFFER_TOO_SMALL);
        CHECK_STATUS(deviceid_mac_address(NULL, 0, mac, sizeof mac, ifname, 1, NULL), DEVICEID_E_BUFFER_TOO_SMALL);
    } else {
        /* Nothing chosen: then no interface here is backed by a device. */
        glob_t found;
        CHECK(glob("/sys/class/net/*/device", 0, NULL, &found) == GLOB_NOMATCH);
        globfree(&found);
    }
}

/* A forked child must not hand out UUIDs from the parent's pool of random bytes. */
static void test_uuids_across_fork(void) {
    char first[DEVICEID_UUID_STRING_MAX], next[DEVICEID_UUID_STRING_MAX], child[DEVICEID_UUID_STRING_MAX] = "";
    CHECK_STATUS(deviceid_uuid_generate(first, sizeof first, 0), DEVICEID_OK); /* the pool is filled */
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        char mine[DEVICEID_UUID_STRING_MAX];
        int ok = deviceid_uuid_generate(mine, sizeof mine, 0) == DEVICEID_OK && write(fds[1], mine, sizeof mine) == sizeof mine;
        _exit(ok ? 0 : 1);
    }
    CHECK_STATUS(deviceid_uuid_generate(next, sizeof next, 0), DEVICEID_OK);
    CHECK(read(fds[0], child, sizeof child) == (ssize_t)sizeof child);
    int status = 0;
    waitpid(pid, &status, 0);
    close(fds[0]);
    close(fds[1]);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(is_canonical_uuid(child));
    CHECK(strcmp(child, next) != 0 && strcmp(child, first) != 0);
}

/* deviceid_identifier_reset: bad scopes refused; a vendor reset mints a new vendor ID. */
static void test_identifier_reset(void) {
    char before[DEVICEID_UUID_STRING_MAX], after[DEVICEID_UUID_STRING_MAX];
    CHECK_STATUS(deviceid_identifier_reset(NULL, 0, "com.acme"), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_identifier_reset(NULL, 5, "com.acme"), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_identifier_reset(NULL, DEVICEID_SCOPE_VENDOR, NULL), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_identifier(NULL, DEVICEID_SCOPE_VENDOR, "com.acme.reset", before, sizeof before, NULL, NULL), DEVICEID_OK);
    CHECK_STATUS(deviceid_identifier_reset(NULL, DEVICEID_SCOPE_VENDOR, "com.acme.reset"), DEVICEID_OK);
    CHECK_STATUS(deviceid_identifier(NULL, DEVICEID_SCOPE_VENDOR, "com.acme.reset", after, sizeof after, NULL, NULL), DEVICEID_OK);
    CHECK(strcmp(before, after) != 0);
    CHECK_STATUS(deviceid_identifier_reset(NULL, DEVICEID_SCOPE_VENDOR, "com.acme.reset"), DEVICEID_OK);
}

static void *reset_on_another_thread(void *app) {
    return (void *)(intptr_t)deviceid_reset(app);
}

/* An answer cached by one thread is forgotten when another thread resets the ID. */
static void test_reset_on_another_thread_clears_the_cache(void) {
    char before[DEVICEID_UUID_STRING_MAX], after[DEVICEID_UUID_STRING_MAX];
    CHECK_STATUS(deviceid_get("cache.reset.app", before, sizeof before), DEVICEID_OK);
    CHECK_STATUS(deviceid_get("cache.reset.app", after, sizeof after), DEVICEID_OK); /* from this thread's cache */
    CHECK(strcmp(before, after) == 0);
    pthread_t thread;
    void *status = NULL;
    CHECK(pthread_create(&thread, NULL, reset_on_another_thread, (void *)"cache.reset.app") == 0);
    pthread_join(thread, &status);
    CHECK((intptr_t)status == DEVICEID_OK);
    CHECK_STATUS(deviceid_get("cache.reset.app", after, sizeof after), DEVICEID_OK);
    CHECK(strcmp(before, after) != 0);
}

/* Writes `content` to root/class/dmi/id/product_uuid, creating the directories; NULL removes it. */
static int write_product_uuid(const char *root, const char *content) {
    char path[1024];
    const char *parts[] = {"/class", "/class/dmi", "/class/dmi/id"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s%s", root, parts[i]);
        mkdir(path, 0755);
    }
    snprintf(path, sizeof path, "%s/class/dmi/id/product_uuid", root);
    if (content == NULL) return unlink(path);
    FILE *f = fopen(path, "w");
    if (f == NULL) return -1;
    fputs(content, f);
    return fclose(f);
}

/* The DMI product UUID, from a sysfs tree of the test's own (DEVICEID_SYSFS_ROOT). */
static void test_product_uuid(const char *dir) {
    char root[512], out[DEVICEID_UUID_STRING_MAX];
    snprintf(root, sizeof root, "%s/sysfs", dir);
    mkdir(root, 0755);
    CHECK(write_product_uuid(root, "4C4C4544-0042-3510-8052-B4C04F4E4B32\n") == 0);
    setenv("DEVICEID_SYSFS_ROOT", root, 1);
    CHECK_STATUS(deviceid_product_uuid_raw(0, out, sizeof out), DEVICEID_OK);
    CHECK(strcmp(out, "4c4c4544-0042-3510-8052-b4c04f4e4b32") == 0);
    CHECK_STATUS(deviceid_product_uuid_raw(DEVICEID_FORMAT_UPPERCASE | DEVICEID_FORMAT_COMPACT, out, 33), DEVICEID_OK);
    CHECK(strcmp(out, "4C4C4544004235108052B4C04F4E4B32") == 0);
    CHECK_STATUS(deviceid_product_uuid_raw(0, out, 36), DEVICEID_E_BUFFER_TOO_SMALL);
    CHECK_STATUS(deviceid_product_uuid_raw(8, out, sizeof out), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_product_uuid_raw(0, NULL, sizeof out), DEVICEID_E_INVALID_ARGUMENT);
    CHECK(write_product_uuid(root, "not a uuid") == 0);
    CHECK_STATUS(deviceid_product_uuid_raw(0, out, sizeof out), DEVICEID_E_CORRUPT);
    CHECK(write_product_uuid(root, NULL) == 0);
    CHECK_STATUS(deviceid_product_uuid_raw(0, out, sizeof out), DEVICEID_E_NOT_FOUND);
    unsetenv("DEVICEID_SYSFS_ROOT");
}

static void test_machine_and_scopes(void) {
    char out[DEVICEID_UUID_STRING_MAX], raw[DEVICEID_UUID_STRING_MAX], line[64] = {0};
    CHECK_STATUS(deviceid_machine_app_specific(NULL, 0, out, sizeof out), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_machine_app_specific("00000000000000000000000000000000", 0, out, sizeof out),
                 DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_machine_app_specific("com.x", 0, out, 36), DEVICEID_E_BUFFER_TOO_SMALL);
    CHECK_STATUS(deviceid_machine_app_specific("4a8b6d2e1f3c4e5d9a7b6c5d4e3f2a1b", DEVICEID_FORMAT_COMPACT, out, sizeof out),
                 DEVICEID_OK);
    FILE *p = popen("systemd-id128 machine-id --app-specific=4a8b6d2e1f3c4e5d9a7b6c5d4e3f2a1b", "r");
    CHECK(p != NULL && fgets(line, sizeof line, p) != NULL);
    if (p) pclose(p);
    line[strcspn(line, "\n")] = 0;
    CHECK(strcmp(out, line) == 0);
    CHECK_STATUS(deviceid_machine_id_raw(DEVICEID_FORMAT_COMPACT, raw, sizeof raw), DEVICEID_OK);
    CHECK(strcmp(raw, out) != 0 && strlen(raw) == 32);

    unsigned flags = 99;
    int source = 0;
    CHECK_STATUS(deviceid_identifier(NULL, 0, "x", out, sizeof out, NULL, NULL), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_identifier(NULL, 5, "x", out, sizeof out, NULL, NULL), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_identifier(NULL, DEVICEID_SCOPE_VENDOR, NULL, out, sizeof out, NULL, NULL), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_identifier(NULL, DEVICEID_SCOPE_VENDOR, "com.acme", out, 36, NULL, NULL), DEVICEID_E_BUFFER_TOO_SMALL);
    CHECK_STATUS(deviceid_identifier(NULL, DEVICEID_SCOPE_VENDOR, "com.acme", out, sizeof out, NULL, NULL), DEVICEID_OK);
    char vendor[DEVICEID_UUID_STRING_MAX];
    strcpy(vendor, out);
    CHECK_STATUS(deviceid_identifier(NULL, DEVICEID_SCOPE_VENDOR, "com.acme", out, sizeof out, &source, &flags), DEVICEID_OK);
    CHECK(strcmp(vendor, out) == 0 && source != 0 && (flags & DEVICEID_FLAG_DEVICE_CHANGED) == 0);
    CHECK_STATUS(deviceid_identifier_reset(NULL, DEVICEID_SCOPE_VENDOR, "com.acme"), DEVICEID_OK);
    CHECK_STATUS(deviceid_identifier(NULL, DEVICEID_SCOPE_VENDOR, "com.acme", out, sizeof out, NULL, NULL), DEVICEID_OK);
    CHECK(strcmp(vendor, out) != 0);

    /* A C boolean is 0 or 1: 2 or -1 is more likely a mistake than a yes. */
    CHECK_STATUS(deviceid_set_advertising_limited(NULL, 2), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_set_advertising_limited(NULL, -1), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_set_advertising_limited(NULL, 1), DEVICEID_OK);
    CHECK(deviceid_get_advertising_limited(NULL) == 1);
    CHECK_STATUS(deviceid_identifier(NULL, DEVICEID_SCOPE_ADVERTISING, NULL, out, sizeof out, NULL, &flags), DEVICEID_OK);
    CHECK(strcmp(out, "00000000-0000-0000-0000-000000000000") == 0 && (flags & DEVICEID_FLAG_LIMITED));
    CHECK_STATUS(deviceid_set_advertising_limited(NULL, 0), DEVICEID_OK);
    CHECK(deviceid_get_advertising_limited(NULL) == 0);
    CHECK_STATUS(deviceid_identifier(NULL, DEVICEID_SCOPE_ADVERTISING, NULL, out, sizeof out, NULL, NULL), DEVICEID_OK);
    CHECK(is_canonical_uuid(out));
    char advertising[DEVICEID_UUID_STRING_MAX];
    strcpy(advertising, out);
    CHECK_STATUS(deviceid_identifier_reset(NULL, DEVICEID_SCOPE_ADVERTISING, NULL), DEVICEID_OK);
    CHECK_STATUS(deviceid_identifier(NULL, DEVICEID_SCOPE_ADVERTISING, NULL, out, sizeof out, NULL, NULL), DEVICEID_OK);
    CHECK(is_canonical_uuid(out) && strcmp(out, advertising) != 0);

    CHECK_STATUS(deviceid_identifier(NULL, DEVICEID_SCOPE_OPENUDID, NULL, out, sizeof out, NULL, NULL), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_identifier(NULL, DEVICEID_SCOPE_OPENUDID, "com.c.one", out, sizeof out, NULL, NULL), DEVICEID_OK);
    char shared[DEVICEID_UUID_STRING_MAX];
    strcpy(shared, out);
    CHECK_STATUS(deviceid_set_openudid_opt_out(NULL, "com.c.two", 7), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_set_openudid_opt_out(NULL, NULL, 1), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_get_openudid_opt_out(NULL, NULL), DEVICEID_E_INVALID_ARGUMENT);
    CHECK(deviceid_get_openudid_opt_out(NULL, "com.c.two") == 0);
    CHECK_STATUS(deviceid_set_openudid_opt_out(NULL, "com.c.two", 1), DEVICEID_OK);
    CHECK(deviceid_get_openudid_opt_out(NULL, "com.c.two") == 1);
    CHECK(deviceid_get_openudid_opt_out(NULL, "com.c.one") == 0);
    CHECK_STATUS(deviceid_identifier(NULL, DEVICEID_SCOPE_OPENUDID, "com.c.two", out, sizeof out, NULL, NULL), DEVICEID_E_OPTED_OUT);
    CHECK(strcmp(out, "00000000-0000-0000-0000-000000000000") == 0);
    CHECK_STATUS(deviceid_set_openudid_opt_out(NULL, "com.c.two", 0), DEVICEID_OK);
    CHECK_STATUS(deviceid_identifier(NULL, DEVICEID_SCOPE_OPENUDID, "com.c.two", out, sizeof out, NULL, NULL), DEVICEID_OK);
    CHECK(strcmp(out, shared) == 0);
}

/* Where the process runs, and where IDs live: every answer is one of the documented values,
 * names and survival bits agree with the header, and bad buffers get a status. */
static void test_environment(const char *dir) {
    deviceid_environment env, again;
    CHECK_STATUS(deviceid_get_environment(NULL, NULL, sizeof env), DEVICEID_E_INVALID_ARGUMENT);
    /* The least size is 1.0's struct, up to portal_detail: one byte less is refused. */
    CHECK_STATUS(deviceid_get_environment(NULL, &env, offsetof(deviceid_environment, protection) - 1),
                 DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_get_environment(NULL, &env, 0), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_get_environment(NULL, &env, SIZE_MAX), DEVICEID_E_INVALID_ARGUMENT);
    memset(&env, 'X', sizeof env);
    CHECK_STATUS(deviceid_get_environment(NULL, &env, sizeof env), DEVICEID_OK);
    int kind = env.kind;
    CHECK(kind >= DEVICEID_ENVIRONMENT_HOST && kind <= DEVICEID_ENVIRONMENT_CONTAINER);
    CHECK(strcmp(deviceid_environment_kind_name(DEVICEID_ENVIRONMENT_FLATPAK), "flatpak") == 0);
    CHECK(strcmp(deviceid_environment_kind_name(99), "unknown") == 0);
    CHECK(memchr(env.name, 0, sizeof env.name) != NULL);
    CHECK((kind == DEVICEID_ENVIRONMENT_HOST) == (env.name[0] == '\0'));
    CHECK((env.machine_id_weak == 0 || env.machine_id_weak == 1) && env.machine_id_reason[0] != '\0');
    /* Not in a sandbox here: the portal is not asked, and says nothing. */
    CHECK(env.portal == DEVICEID_PORTAL_NOT_ASKED && env.portal_detail[0] == '\0');
    CHECK(strcmp(deviceid_portal_state_name(DEVICEID_PORTAL_SECRET), "secret") == 0);
    int store = env.store_location;
    CHECK(store == DEVICEID_LOCATION_HOST || store == DEVICEID_LOCATION_CONTAINER ||
          store == DEVICEID_LOCATION_VOLUME || store == DEVICEID_LOCATION_BIND_MOUNT);
    CHECK(strcmp(env.store_path, dir) == 0);
    /* The file backend: the stable ID lives where the store does, and says so. */
    CHECK(env.stable_id_location == store);
    CHECK(env.stable_id_survives == deviceid_location_survives(store));
    /* Portable, the default: nothing binds it, and the words say so. */
    CHECK(env.protection == DEVICEID_PROTECTION_PORTABLE && env.binding == DEVICEID_BINDING_NONE);
    CHECK(env.binding_detail[0] != '\0' && memchr(env.binding_detail, 0, sizeof env.binding_detail) != NULL);
    /* A caller built against 1.0 passes 1.0's size: it gets those fields, and nothing past them is touched. */
    deviceid_environment older;
    memset(&older, 'X', sizeof older);
    CHECK_STATUS(deviceid_get_environment(NULL, &older, offsetof(deviceid_environment, protection)), DEVICEID_OK);
    CHECK(memcmp(&older, &env, offsetof(deviceid_environment, protection)) == 0);
    CHECK(((const char *)&older)[offsetof(deviceid_environment, protection)] == 'X');
    /* One snapshot: a second call answers the same. */
    CHECK_STATUS(deviceid_get_environment(NULL, &again, sizeof again), DEVICEID_OK);
    CHECK(memcmp(&env, &again, sizeof env) == 0);
    /* A caller compiled against a later header passes a larger struct: the fields this library
       does not know come back zero, and nothing past the size it gave is touched. */
    struct { deviceid_environment known; int later[4]; char guard[8]; } newer;
    memset(&newer, 'X', sizeof newer);
    CHECK_STATUS(deviceid_get_environment(NULL, (deviceid_environment *)&newer,
                                          sizeof newer.known + sizeof newer.later), DEVICEID_OK);
    CHECK(newer.later[0] == 0 && newer.later[3] == 0 && newer.guard[0] == 'X');
    CHECK(memcmp(&newer.known, &env, sizeof env) == 0);
    /* A context with another store directory: its own store path, the process-wide one untouched. */
    deviceid_context *ctx = NULL;
    char other[4096];
    snprintf(other, sizeof other, "%s/environment-context", dir);
    CHECK_STATUS(deviceid_context_new(&ctx), DEVICEID_OK);
    CHECK_STATUS(deviceid_set_store_dir(ctx, other), DEVICEID_OK);
    CHECK_STATUS(deviceid_get_environment(ctx, &again, sizeof again), DEVICEID_OK);
    CHECK(strcmp(again.store_path, other) == 0);
    deviceid_context_free(ctx);
    CHECK(deviceid_identifier_location(NULL, DEVICEID_SCOPE_APP, "com.example.c-location") == store);
    CHECK_STATUS(deviceid_identifier_location(NULL, DEVICEID_SCOPE_APP, NULL), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_identifier_location(NULL, 42, "x"), DEVICEID_E_INVALID_ARGUMENT);
    CHECK(strcmp(deviceid_location_name(DEVICEID_LOCATION_BIND_MOUNT), "bind-mount") == 0);
    CHECK(strcmp(deviceid_location_name(DEVICEID_LOCATION_UNDETERMINED), "undetermined") == 0);
    CHECK(deviceid_location_survives(DEVICEID_LOCATION_UNDETERMINED) == DEVICEID_SURVIVES_APP_DATA_REMOVAL);
    CHECK(strcmp(deviceid_location_name(0), "unknown") == 0);
    CHECK(deviceid_location_survives(DEVICEID_LOCATION_PORTAL) ==
          (DEVICEID_SURVIVES_APP_DATA_REMOVAL | DEVICEID_SURVIVES_CONTAINER_REMOVAL));
    CHECK(deviceid_location_survives(DEVICEID_LOCATION_APP_DATA) == DEVICEID_SURVIVES_CONTAINER_REMOVAL);
    CHECK(deviceid_location_survives(DEVICEID_LOCATION_CONTAINER) == DEVICEID_SURVIVES_APP_DATA_REMOVAL);
    CHECK(deviceid_location_survives(-1) == 0);
    CHECK(strcmp(deviceid_source_name(DEVICEID_SOURCE_PORTAL), "portal") == 0);
}

/* A context has its own configuration and answers: another store directory gives another ID,
 * the process-wide configuration is untouched, NULL names the process-wide one, and a context
 * made before fork() works in the child. */
static void test_contexts(const char *dir) {
    char a[DEVICEID_UUID_STRING_MAX], b[DEVICEID_UUID_STRING_MAX], shared[DEVICEID_UUID_STRING_MAX];
    char path[4096];
    deviceid_context *one = NULL, *two = NULL;
    CHECK_STATUS(deviceid_context_new(NULL), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_context_new(&one), DEVICEID_OK);
    CHECK_STATUS(deviceid_context_new(&two), DEVICEID_OK);
    CHECK(one != NULL && two != NULL && one != two);
    int backend = deviceid_get_backend(NULL);
    CHECK_STATUS(deviceid_set_backend(one, DEVICEID_BACKEND_FILE), DEVICEID_OK);
    CHECK_STATUS(deviceid_set_backend(two, DEVICEID_BACKEND_FILE), DEVICEID_OK);
    CHECK_STATUS(deviceid_set_backend(one, 42), DEVICEID_E_INVALID_ARGUMENT);
    CHECK(deviceid_get_backend(one) == DEVICEID_BACKEND_FILE);
    CHECK(deviceid_get_backend(NULL) == backend);
    snprintf(path, sizeof path, "%s/context-one", dir);
    CHECK_STATUS(deviceid_set_store_dir(one, path), DEVICEID_OK);
    snprintf(path, sizeof path, "%s/context-two", dir);
    CHECK_STATUS(deviceid_set_store_dir(two, path), DEVICEID_OK);
    CHECK_STATUS(deviceid_set_store_dir(one, "relative"), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_set_timeout_ms(one, 0), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_set_timeout_ms(one, 2000), DEVICEID_OK);
    unsigned int one_timeout = 0, shared_timeout = 0;
    CHECK_STATUS(deviceid_get_timeout_ms(one, &one_timeout), DEVICEID_OK);
    CHECK_STATUS(deviceid_get_timeout_ms(NULL, &shared_timeout), DEVICEID_OK);
    CHECK(one_timeout == 2000 && shared_timeout != 2000);
    CHECK_STATUS(deviceid_set_interactive(one, 1, 0), DEVICEID_OK);
    CHECK(deviceid_get_interactive(one) == 1 && deviceid_get_interactive(NULL) == 0);
    CHECK_STATUS(deviceid_set_interactive(one, 0, 0), DEVICEID_OK);
    CHECK_STATUS(deviceid_identifier(one, DEVICEID_SCOPE_APP, "com.example.context", a, sizeof a, NULL, NULL),
                 DEVICEID_OK);
    CHECK_STATUS(deviceid_identifier(two, DEVICEID_SCOPE_APP, "com.example.context", b, sizeof b, NULL, NULL),
                 DEVICEID_OK);
    CHECK(is_canonical_uuid(a) && is_canonical_uuid(b) && strcmp(a, b) != 0);
    CHECK_STATUS(deviceid_identifier(NULL, DEVICEID_SCOPE_APP, "com.example.context", shared, sizeof shared, NULL, NULL), DEVICEID_OK);
    char via_get[DEVICEID_UUID_STRING_MAX];
    CHECK_STATUS(deviceid_get("com.example.context", via_get, sizeof via_get), DEVICEID_OK);
    CHECK(strcmp(shared, via_get) == 0);
    CHECK(deviceid_identifier_location(one, DEVICEID_SCOPE_APP, "com.example.context") > 0);
    CHECK_STATUS(deviceid_secret_store(one, "ctx.service", "acct", "v", 1), DEVICEID_OK);
    void *data = NULL;
    size_t size = 0;
    CHECK_STATUS(deviceid_secret_lookup(two, "ctx.service", "acct", &data, &size), DEVICEID_E_NOT_FOUND);
    CHECK_STATUS(deviceid_secret_lookup(one, "ctx.service", "acct", &data, &size), DEVICEID_OK);
    CHECK(size == 1 && data != NULL && memcmp(data, "v", 1) == 0);
    deviceid_free(data);
    CHECK_STATUS(deviceid_secret_delete(one, "ctx.service", "acct"), DEVICEID_OK);
    CHECK_STATUS(deviceid_secret_delete(one, "ctx.service", "acct"), DEVICEID_E_NOT_FOUND);
    /* Settings are the context's stores': limiting ad tracking through one leaves the other, and
       the process-wide configuration, as they were. */
    int limited = deviceid_get_advertising_limited(NULL);
    CHECK_STATUS(deviceid_set_advertising_limited(one, 1), DEVICEID_OK);
    CHECK(deviceid_get_advertising_limited(one) == 1 && deviceid_get_advertising_limited(two) == 0);
    CHECK(deviceid_get_advertising_limited(NULL) == limited);
    CHECK_STATUS(deviceid_identifier(one, DEVICEID_SCOPE_ADVERTISING, NULL, b, sizeof b, NULL, NULL), DEVICEID_OK);
    CHECK(strcmp(b, "00000000-0000-0000-0000-000000000000") == 0);
    CHECK_STATUS(deviceid_set_openudid_opt_out(two, "com.example.context", 1), DEVICEID_OK);
    CHECK(deviceid_get_openudid_opt_out(two, "com.example.context") == 1);
    CHECK(deviceid_get_openudid_opt_out(one, "com.example.context") == 0);
    pid_t child = fork();
    if (child == 0) {
        char again[DEVICEID_UUID_STRING_MAX];
        int r = deviceid_identifier(one, DEVICEID_SCOPE_APP, "com.example.context", again, sizeof again, NULL, NULL);
        _exit(r == 0 && strcmp(again, a) == 0 ? 0 : 1);
    }
    int status = 0;
    CHECK(child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_STATUS(deviceid_identifier_reset(one, DEVICEID_SCOPE_APP, "com.example.context"), DEVICEID_OK);
    CHECK_STATUS(deviceid_identifier(one, DEVICEID_SCOPE_APP, "com.example.context", b, sizeof b, NULL, NULL),
                 DEVICEID_OK);
    CHECK(strcmp(a, b) != 0);
    deviceid_context_free(one);
    deviceid_context_free(two);
    deviceid_context_free(NULL);

    /* A context is a handle: a freed one, one freed twice, a small number (0.3's first argument
     * was a backend or a flag) or an address is refused, never dereferenced. */
    deviceid_context_free(one);
    int on_the_stack = 0;
    deviceid_context *made_up[] = {one, two, (deviceid_context *)(uintptr_t)1, (deviceid_context *)(uintptr_t)2,
                                   (deviceid_context *)(uintptr_t)0xD1D5, (deviceid_context *)&on_the_stack,
                                   (deviceid_context *)(uintptr_t)-1};
    for (size_t i = 0; i < sizeof made_up / sizeof made_up[0]; i++) {
        deviceid_context *bad = made_up[i];
        CHECK_STATUS(deviceid_identifier(bad, DEVICEID_SCOPE_APP, "com.example.context", b, sizeof b, NULL, NULL),
                     DEVICEID_E_INVALID_ARGUMENT);
        CHECK(strstr(deviceid_last_error(), "not a context of this process") != NULL);
        CHECK_STATUS(deviceid_get_backend(bad), DEVICEID_E_INVALID_ARGUMENT);
        CHECK_STATUS(deviceid_set_timeout_ms(bad, 1000), DEVICEID_E_INVALID_ARGUMENT);
        CHECK_STATUS(deviceid_identifier_reset(bad, DEVICEID_SCOPE_APP, "com.example.context"),
                     DEVICEID_E_INVALID_ARGUMENT);
        deviceid_environment environment;
        CHECK_STATUS(deviceid_get_environment(bad, &environment, sizeof environment), DEVICEID_E_INVALID_ARGUMENT);
        deviceid_context_free(bad);
    }
    deviceid_context *three = NULL;
    CHECK_STATUS(deviceid_context_new(&three), DEVICEID_OK);
    CHECK(three != one && three != two);
    CHECK_STATUS(deviceid_get_backend(one), DEVICEID_E_INVALID_ARGUMENT);
    CHECK(deviceid_get_backend(three) >= 0);
    deviceid_context_free(three);
}

/* The hardware-bound ID and attestation: every bad argument gets its status before the TPM is
 * asked, and a TPM that is not there is UNAVAILABLE (the TPM itself: Tests/tpm). */
static void test_hardware_bad_input(void) {
    char out[DEVICEID_UUID_STRING_MAX];
    char *message = (char *)"untouched";
    const unsigned char nonce[65] = {0};
    setenv("DEVICEID_TPM_TCTI", "device:/nonexistent/tpmrm0", 1);
    CHECK_STATUS(deviceid_hardware_id(NULL, NULL, out, sizeof out), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_hardware_id(NULL, "com.example.hw", NULL, sizeof out), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_hardware_id(NULL, "com.example.hw", out, 36), DEVICEID_E_BUFFER_TOO_SMALL);
    CHECK_STATUS(deviceid_hardware_id(NULL, "com.example.hw", out, sizeof out), DEVICEID_E_UNAVAILABLE);
    CHECK(strstr(deviceid_last_error(), "/nonexistent/tpmrm0 does not exist") != NULL);
    CHECK_STATUS(deviceid_attest_enrolment(NULL, "com.example.hw", NULL), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_attest_enrolment(NULL, NULL, &message), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_attest_enrolment(NULL, "com.example.hw", &message), DEVICEID_E_UNAVAILABLE);
    CHECK(message == NULL);
    CHECK_STATUS(deviceid_attest(NULL, "com.example.hw", NULL, 32, NULL, &message), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_attest(NULL, "com.example.hw", nonce, 0, NULL, &message), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_attest(NULL, "com.example.hw", nonce, 65, NULL, &message), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_attest(NULL, NULL, nonce, 32, NULL, &message), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_attest(NULL, "com.example.hw", nonce, 32, "not json", &message), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_attest(NULL, "com.example.hw", nonce, 32, "{\"v\":1,\"type\":\"deviceid.ak-certificate\"}", &message),
                 DEVICEID_E_INVALID_ARGUMENT);
    CHECK(strstr(deviceid_last_error(), "\"certificate\"") != NULL);
    CHECK_STATUS(deviceid_attest(NULL, "com.example.hw", nonce, 32, NULL, NULL), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_attest(NULL, "com.example.hw", nonce, 32, NULL, &message), DEVICEID_E_UNAVAILABLE);
    CHECK(message == NULL);
    // App Attest: a 32-byte hash, a certificate message for the registration; then the TPM.
    const char *certificate = "{\"v\":1,\"type\":\"deviceid.ak-certificate\",\"certificate\":\"MAA=\"}";
    CHECK_STATUS(deviceid_attest_webauthn(NULL, "com.example.hw", nonce, 31, certificate, &message),
                 DEVICEID_E_INVALID_ARGUMENT);
    CHECK(strstr(deviceid_last_error(), "32 bytes") != NULL);
    CHECK_STATUS(deviceid_attest_webauthn(NULL, "com.example.hw", NULL, 32, certificate, &message),
                 DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_attest_webauthn(NULL, "com.example.hw", nonce, 32, NULL, &message), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_attest_webauthn(NULL, "com.example.hw", nonce, 32, "{}", &message), DEVICEID_E_UNSUPPORTED);
    CHECK_STATUS(deviceid_attest_webauthn(NULL, NULL, nonce, 32, certificate, &message), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_attest_webauthn(NULL, "com.example.hw", nonce, 32, certificate, NULL),
                 DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_attest_webauthn(NULL, "com.example.hw", nonce, 32, certificate, &message),
                 DEVICEID_E_UNAVAILABLE);
    CHECK(message == NULL);
    CHECK_STATUS(deviceid_assert(NULL, "com.example.hw", nonce, 33, &message), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_assert(NULL, "com.example.hw", NULL, 0, &message), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_assert(NULL, NULL, nonce, 32, &message), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_assert(NULL, "com.example.hw", nonce, 32, NULL), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_assert(NULL, "com.example.hw", nonce, 32, &message), DEVICEID_E_UNAVAILABLE);
    CHECK(message == NULL);
    CHECK_STATUS(deviceid_attest_activate(NULL, "com.example.hw", NULL, &message), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_attest_activate(NULL, NULL, "{}", &message), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_attest_activate(NULL, "com.example.hw", "{\"v\":1,\"type\":\"deviceid.enrolment-request\"}", &message),
                 DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_attest_activate(NULL, "com.example.hw", "{\"v\":2,\"type\":\"deviceid.enrolment-challenge\"}", &message),
                 DEVICEID_E_UNSUPPORTED);
    CHECK_STATUS(deviceid_attest_activate(NULL, "com.example.hw", "{\"v\":1,\"type\":\"deviceid.enrolment-challenge\",\"id\":\"1\","
                                          "\"credential_blob\":\"!!\",\"encrypted_secret\":\"AA==\"}", &message),
                 DEVICEID_E_INVALID_ARGUMENT);
    setenv("DEVICEID_TPM_TCTI", "device:/dev/tpm0", 1);
    CHECK_STATUS(deviceid_hardware_id(NULL, "com.example.hw", out, sizeof out), DEVICEID_E_INVALID_ARGUMENT);
    CHECK(strstr(deviceid_last_error(), "resource manager") != NULL);
    setenv("DEVICEID_TPM_TCTI", "mssim:host=localhost", 1);
    CHECK_STATUS(deviceid_hardware_id(NULL, "com.example.hw", out, sizeof out), DEVICEID_E_UNSUPPORTED);
    unsetenv("DEVICEID_TPM_TCTI");
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s STORE_DIR\n", argv[0]);
        return 2;
    }
    test_constants();
    test_configuration(argv[1]);
    test_get_bad_input();
    test_get();
    test_secrets();
    test_uuids_and_digests();
    test_machine_and_scopes();
    test_product_uuid(argv[1]);
    test_uuids_across_fork();
    test_reset_on_another_thread_clears_the_cache();
    test_identifier_reset();
    test_environment(argv[1]);
    test_contexts(argv[1]);
    test_hardware_bad_input();
    /* The same again with the keyring (auto backend) where the test run has one. */
    CHECK_STATUS(deviceid_set_backend(NULL, DEVICEID_BACKEND_AUTO), DEVICEID_OK);
    test_get();
    test_secrets();
    test_machine_and_scopes();
    test_reset_on_another_thread_clears_the_cache();
    printf("c: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
