/* In-process microbenchmarks, DeviceID beside what a C programmer would otherwise call, in the
 * same run: each operation is timed over ITER calls, SAMPLES times; min/median/max ns per call.
 *
 *   micro [SAMPLES]      prints one line per operation: "name min median max"
 */
#define _GNU_SOURCE
/* The anchor is OpenSSL's one-shot MD5(), deprecated since 3.0 but what callers use. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <deviceid.h>
#include <deviceid-techniques.h>

#include "bench.h"

#include <openssl/evp.h>
#include <openssl/md5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <systemd/sd-id128.h>
#include <time.h>
#include <uuid/uuid.h>

#define ITER 20000

static volatile int sink;
static int samples = 15;

#define BENCH(name, body)                                                        \
    do {                                                                         \
        double t[64];                                                            \
        for (int s = 0; s < samples; s++) {                                      \
            double start = now_ns();                                             \
            for (int i = 0; i < ITER; i++) { body; }                             \
            t[s] = (now_ns() - start) / ITER;                                    \
        }                                                                        \
        qsort(t, samples, sizeof t[0], compare_doubles);                                     \
        printf("%s %.1f %.1f %.1f\n", name, t[0], t[samples / 2], t[samples - 1]); \
    } while (0)

static const char hexdigits[] = "0123456789abcdef";
static void hex(const unsigned char *in, size_t n, char *out) {
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hexdigits[in[i] >> 4];
        out[2 * i + 1] = hexdigits[in[i] & 15];
    }
    out[2 * n] = 0;
}

int main(int argc, char **argv) {
    if (argc > 1) samples = atoi(argv[1]);
    if (samples < 3 || samples > 64) samples = 15;
    char out[128];
    unsigned char raw[32];
    const char input[] = "00163E123456com.example.app"; /* MD5(MAC + bundle id) input */
    size_t input_len = strlen(input);

    if (deviceid_get("bench.app", out, sizeof out) != 0) {
        fprintf(stderr, "deviceid_get failed: %s\n", deviceid_last_error());
        return 1;
    }
    sd_id128_t id, app = SD_ID128_MAKE(4a,8b,6d,2e,1f,3c,4e,5d,9a,7b,6c,5d,4e,3f,2a,1b);
    sd_id128_get_machine(&id);

    BENCH("cached_get.deviceid_get", sink += deviceid_get("bench.app", out, sizeof out));
    BENCH("cached_get.sd_id128_get_machine", sink += sd_id128_get_machine(&id));

    BENCH("uuid.deviceid_uuid_generate", sink += deviceid_uuid_generate(out, sizeof out, 0));
    BENCH("uuid.libuuid_generate_random+unparse", { uuid_t u; uuid_generate_random(u); uuid_unparse_lower(u, out); sink += out[0]; });
    BENCH("uuid.getrandom16_only", sink += (int)getrandom(raw, 16, 0));

    BENCH("md5.deviceid_hash_hex", sink += deviceid_hash_hex(DEVICEID_HASH_MD5, input, input_len, out, sizeof out));
    BENCH("md5.openssl_MD5+hex", { MD5((const unsigned char *)input, input_len, raw); hex(raw, 16, out); sink += out[0]; });
    BENCH("md5.openssl_EVP_Digest(EVP_md5())+hex", {
        unsigned int n; EVP_Digest(input, input_len, raw, &n, EVP_md5(), NULL); hex(raw, 16, out); sink += out[0]; });

    BENCH("app_specific.deviceid_machine_app_specific",
          sink += deviceid_machine_app_specific("4a8b6d2e1f3c4e5d9a7b6c5d4e3f2a1b", DEVICEID_FORMAT_COMPACT, out, sizeof out));
    BENCH("app_specific.sd_id128_get_machine_app_specific+format", {
        sd_id128_get_machine_app_specific(app, &id); sd_id128_to_string(id, out); sink += out[0]; });

    BENCH("mac_md5.deviceid_mac_md5(discovery+md5)", sink += deviceid_mac_md5(NULL, "com.example.app", out, sizeof out, NULL));
    return 0;
}
