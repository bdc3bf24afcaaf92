/* libFuzzer over the C ABI, as a hostile C caller would use it: every input byte string becomes
 * one call with a string argument (NUL-terminated copy of the input, embedded NULs included) and
 * an output buffer of exactly the size the input asks for, so that ASan sees any overrun.
 *
 *   scripts/fuzz capi 60
 */
#include <deviceid.h>
#include <deviceid-techniques.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    static char dir[] = "/tmp/deviceid-fuzz.XXXXXX";
    if (!mkdtemp(dir)) abort();
    setenv("DEVICEID_STORE_DIR", dir, 1);
    unsetenv("DBUS_SESSION_BUS_ADDRESS"); /* no keyring: the file store only */
    unsetenv("DISPLAY");
    if (deviceid_set_backend(NULL, DEVICEID_BACKEND_FILE) != 0) abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    uint8_t op = data[0], arg = data[1];
    size_t n = size - 2;
    char *s = malloc(n + 1);
    memcpy(s, data + 2, n);
    s[n] = '\0';
    /* A second string: what follows the first NUL, if anything. */
    size_t first = strlen(s);
    const char *s2 = first < n ? s + first + 1 : "account";
    size_t out_size = arg;
    char *out = malloc(out_size ? out_size : 1);
    unsigned flags = 0;
    int source = 0, r;
    unsigned char bytes[16];
    void *secret = NULL;
    size_t secret_size = 0;

    switch (op % 26) {
    case 0: r = deviceid_get(s, out, out_size); if (r == 0) deviceid_reset(s); break;
    case 1: deviceid_identifier(NULL, DEVICEID_SCOPE_APP, s, out, out_size, &source, &flags); deviceid_reset(s); break;
    case 2: deviceid_reset(s); break;
    case 3: deviceid_secret_store(NULL, s, s2, data + 2, n); deviceid_secret_delete(NULL, s, s2); break;
    case 4:
        if (deviceid_secret_store(NULL, s, s2, data, size) == 0 &&
            deviceid_secret_lookup(NULL, s, s2, &secret, &secret_size) == 0) {
            if (secret_size != size || memcmp(secret, data, size) != 0) abort();
            deviceid_free(secret);
        }
        deviceid_secret_delete(NULL, s, s2);
        break;
    case 5: deviceid_uuid_parse(s, bytes); break;
    case 6: if (n >= 16) deviceid_uuid_format(data + 2, arg & 3, out, out_size); break;
    case 7: deviceid_uuid_generate(out, out_size, arg >> 4); break;
    case 8: deviceid_hash_hex(arg & 3, data + 2, n, out, out_size); break;
    case 9: deviceid_token_hash(arg & 3, data + 2, first, s2, out, out_size); break;
    case 10: deviceid_machine_app_specific(s, arg & 3, out, out_size); break;
    case 11: deviceid_machine_id_raw(arg & 7, out, out_size); break;
    case 12: deviceid_mac_address(s, arg & 3, out, out_size, out, out_size, &flags); break;
    case 13: deviceid_mac_md5(s, s2, out, out_size, &flags); break;
    case 14: deviceid_identifier(NULL, (int)(arg % 6), s, out, out_size, &source, &flags);
             deviceid_identifier_reset(NULL, (int)(arg % 6), s); break;
    case 15: deviceid_identifier(NULL, DEVICEID_SCOPE_VENDOR, s, out, out_size, NULL, NULL); deviceid_identifier_reset(NULL, DEVICEID_SCOPE_VENDOR, s); break;
    case 16: deviceid_set_openudid_opt_out(NULL, s, arg & 1); deviceid_identifier(NULL, DEVICEID_SCOPE_OPENUDID, s, out, out_size, NULL, NULL); break;
    case 17: deviceid_strerror((int)(int8_t)arg); deviceid_status_name(-(int)arg); deviceid_source_name(arg); break;
    case 18: deviceid_set_timeout_ms(NULL, (unsigned)arg * 1000u); deviceid_set_timeout_ms(NULL, 5000); break;
    case 19: deviceid_set_backend(NULL, (int)(int8_t)arg); deviceid_set_backend(NULL, DEVICEID_BACKEND_FILE);
             deviceid_set_protection(NULL, (int)(int8_t)arg); deviceid_get_protection(NULL);
             deviceid_set_protection(NULL, DEVICEID_PROTECTION_PORTABLE); break;
    case 20: deviceid_secret_lookup(NULL, s, s2, &secret, &secret_size); deviceid_free(secret); break;
    case 21: deviceid_set_advertising_limited(NULL, arg & 1); deviceid_identifier(NULL, DEVICEID_SCOPE_ADVERTISING, NULL, out, out_size, NULL, NULL); break;
    case 22: {
        /* The environment with every size around the struct's, in a buffer of that size. */
        size_t env_size = sizeof(deviceid_environment) - 128 + (size_t)arg;
        void *env = malloc(env_size);
        deviceid_get_environment(NULL, env, env_size);
        free(env);
        break;
    }
    case 23: deviceid_set_openudid_opt_out(NULL, s, (int)(int8_t)arg); deviceid_get_openudid_opt_out(NULL, s); break;
    case 24: deviceid_set_advertising_limited(NULL, (int)(int8_t)arg); deviceid_get_advertising_limited(NULL);
             deviceid_set_advertising_limited(NULL, 0); break;
    case 25: {
        unsigned int ms = 0;
        deviceid_set_interactive(NULL, (int)(int8_t)arg, arg * 1000u); deviceid_get_interactive(NULL);
        deviceid_get_timeout_ms(NULL, arg & 1 ? &ms : NULL); deviceid_set_interactive(NULL, 0, 0);
        deviceid_environment_kind_name(arg); deviceid_portal_state_name(arg); deviceid_location_name(arg);
        deviceid_location_survives(arg);
        break;
    }
    }
    (void)deviceid_last_error();
    free(out);
    free(s);
    return 0;
}
