/* The first keyring lookup in a fresh process with raw libsecret (secret_password_lookupv_sync,
 * the call most C programs use), timed from inside main: libsecret and GLib were loaded before
 * main, by the dynamic linker. Prints nanoseconds.   first_call_libsecret APP */
#include "bench.h"

#include <libsecret/secret.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    double start = now_ns();
    GHashTable *attributes = g_hash_table_new(g_str_hash, g_str_equal);
    g_hash_table_insert(attributes, "service", "deviceid.app");
    g_hash_table_insert(attributes, "username", argv[1]);
    GError *error = NULL;
    gchar *value = secret_password_lookupv_sync(NULL, attributes, NULL, &error);
    if (value == NULL) return 1;
    secret_password_free(value);
    g_hash_table_unref(attributes);
    printf("%.0f\n", now_ns() - start);
    return 0;
}
