/* The first keyring lookup in a fresh process, timed from inside: libdeviceid's deviceid_get
 * against a raw libsecret lookup of the same item (secret_password_lookupv_sync, the call most C
 * programs use). Prints nanoseconds.
 *
 *   first_call deviceid APP | first_call libsecret APP
 */
#include <deviceid.h>

#include "bench.h"

#include <libsecret/secret.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    double start = now_ns();
    if (strcmp(argv[1], "deviceid") == 0) {
        char id[DEVICEID_UUID_STRING_MAX];
        int source = 0;
        if (deviceid_get_ex(argv[2], id, sizeof id, &source, NULL) != 0 || source != DEVICEID_SOURCE_KEYRING) return 1;
    } else {
        GHashTable *attributes = g_hash_table_new(g_str_hash, g_str_equal);
        g_hash_table_insert(attributes, "service", "deviceid.app");
        g_hash_table_insert(attributes, "username", argv[2]);
        GError *error = NULL;
        gchar *value = secret_password_lookupv_sync(NULL, attributes, NULL, &error);
        if (value == NULL) return 1;
        secret_password_free(value);
        g_hash_table_unref(attributes);
    }
    printf("%.0f\n", now_ns() - start);
    return 0;
}
