/* The first deviceid_get in a fresh process, timed from inside main. It links libdeviceid only:
 * what the answer needs besides libc (libsecret and GLib when the keyring is asked) is loaded
 * inside the timed call. Prints nanoseconds.   first_call_deviceid APP [keyring|mirror] */
#include <deviceid.h>

#include "bench.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    int expect_mirrored = argc > 2 && strcmp(argv[2], "mirror") == 0;
    double start = now_ns();
    char id[DEVICEID_UUID_STRING_MAX];
    int source = 0;
    unsigned int flags = 0;
    if (deviceid_identifier(NULL, DEVICEID_SCOPE_APP, argv[1], id, sizeof id, &source, &flags) != 0 || source != DEVICEID_SOURCE_KEYRING) return 1;
    if (!!(flags & DEVICEID_FLAG_MIRRORED) != expect_mirrored) return 3;
    printf("%.0f\n", now_ns() - start);
    return 0;
}
