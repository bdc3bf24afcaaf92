/* The C ABI as a C caller sees it, built with -Wall -Wextra -Werror through pkg-config against
 * the installed prefix. Every bad input must come back as its status, never as a crash.
 *
 *   test_capi STORE_DIR     (uses the file backend in STORE_DIR, then auto)
 */
#include <deviceid.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    CHECK(strcmp(deviceid_version_string(), DEVICEID_VERSION_STRING) == 0);
    CHECK(strcmp(deviceid_version_string(), expected) == 0);
    CHECK(deviceid_version_major() == DEVICEID_VERSION_MAJOR);
    CHECK(deviceid_version_minor() == DEVICEID_VERSION_MINOR);
    CHECK(deviceid_version_patch() == DEVICEID_VERSION_PATCH);
    CHECK(deviceid_uuid_string_max() == DEVICEID_UUID_STRING_MAX);
    CHECK(deviceid_name_max() == DEVICEID_NAME_MAX);
    CHECK(deviceid_secret_max() == DEVICEID_SECRET_MAX);

    static const struct { int status; const char *name; } statuses[] = {
        {DEVICEID_OK, "OK"}, {DEVICEID_E_INVALID_ARGUMENT, "INVALID_ARGUMENT"},
        {DEVICEID_E_BUFFER_TOO_SMALL, "BUFFER_TOO_SMALL"}, {DEVICEID_E_NOT_FOUND, "NOT_FOUND"},
        {DEVICEID_E_LOCKED, "LOCKED"}, {DEVICEID_E_UNAVAILABLE, "UNAVAILABLE"},
        {DEVICEID_E_TIMED_OUT, "TIMED_OUT"}, {DEVICEID_E_CORRUPT, "CORRUPT"}, {DEVICEID_E_IO, "IO"},
        {DEVICEID_E_PERMISSION, "PERMISSION"}, {DEVICEID_E_NO_MEMORY, "NO_MEMORY"},
        {DEVICEID_E_TOO_LARGE, "TOO_LARGE"}, {DEVICEID_E_UNSUPPORTED, "UNSUPPORTED"},
        {DEVICEID_E_KEYRING, "KEYRING"}, {DEVICEID_E_OPTED_OUT, "OPTED_OUT"},
        {DEVICEID_E_INTERNAL, "INTERNAL"}, {DEVICEID_E_INVALID_MACHINE_ID, "INVALID_MACHINE_ID"},
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
    CHECK_STATUS(deviceid_set_backend(3), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_set_backend(-1), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_set_timeout_ms(0), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_set_timeout_ms(86400001u), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_set_timeout_ms(3000), DEVICEID_OK);
    CHECK_STATUS(deviceid_set_store_dir("relative/path"), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_set_store_dir("\xff\xfe"), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_set_store_dir(NULL), DEVICEID_OK);
    CHECK_STATUS(deviceid_set_store_dir(dir), DEVICEID_OK);
    CHECK_STATUS(deviceid_set_backend(DEVICEID_BACKEND_FILE), DEVICEID_OK);
    CHECK_STATUS(deviceid_get_backend(), DEVICEID_BACKEND_FILE);
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
    CHECK_STATUS(deviceid_get_ex("com.example.c", a, sizeof a, &source, NULL), DEVICEID_OK);
    CHECK(is_canonical_uuid(a));
    CHECK(source == DEVICEID_SOURCE_CREATED);
    CHECK_STATUS(deviceid_get_ex("com.example.c", b, SIZE_MAX, NULL, NULL), DEVICEID_OK);
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
    CHECK_STATUS(deviceid_secret_store(NULL, "acct", value, sizeof value), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_secret_store("svc", NULL, value, sizeof value), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_secret_store("svc", "acct", NULL, 1), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_secret_store("svc", "acct", value, SIZE_MAX), DEVICEID_E_TOO_LARGE);
    CHECK_STATUS(deviceid_secret_store("svc", "acct", value, DEVICEID_SECRET_MAX + 1), DEVICEID_E_TOO_LARGE);
    CHECK_STATUS(deviceid_secret_store("deviceid.app", "acct", value, 1), DEVICEID_E_INVALID_ARGUMENT);
    CHECK_STATUS(deviceid_secret_lookup("svc", "acct", NULL, &size), DEVICEID_E_INVALID_ARGUMENT);
    CHECK(size == 0);
    CHECK_STATUS(deviceid_secret_lookup("svc", "acct", &data, NULL), DEVICEID_E_INVALID_ARGUMENT);
    CHECK(data == NULL);
    CHECK_STATUS(deviceid_secret_delete("svc", ""), DEVICEID_E_INVALID_ARGUMENT);

    deviceid_secret_delete("svc", "acct");
    CHECK_STATUS(deviceid_secret_lookup("svc", "acct", &data, &size), DEVICEID_E_NOT_FOUND);
    CHECK(data == NULL && size == 0);
    CHECK_STATUS(deviceid_secret_store("svc", "acct", value, sizeof value), DEVICEID_OK);
    CHECK_STATUS(deviceid_secret_lookup("svc", "acct", &data, &size), DEVICEID_OK);
    CHECK(size == sizeof value && data != NULL && memcmp(data, value, size) == 0);
    CHECK(data != NULL && ((unsigned char *)data)[size] == 0);
    deviceid_free(data);
    CHECK_STATUS(deviceid_secret_store("svc", "acct", NULL, 0), DEVICEID_OK);
    CHECK_STATUS(deviceid_secret_lookup("svc", "acct", &data, &size), DEVICEID_OK);
    CHECK(size == 0 && data != NULL);
    deviceid_free(data);
    CHECK_STATUS(deviceid_secret_delete("svc", "acct"), DEVICEID_OK);
    CHECK_STATUS(deviceid_secret_delete("svc", "acct"), DEVICEID_E_NOT_FOUND);
    deviceid_free(NULL);
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
    /* The same again with the keyring (auto backend) where the test run has one. */
    CHECK_STATUS(deviceid_set_backend(DEVICEID_BACKEND_AUTO), DEVICEID_OK);
    test_get();
    test_secrets();
    printf("c: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
