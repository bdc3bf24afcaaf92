/* One DeviceID operation through the C library, its outcome printed as one JSON object: the "c"
 * driver of Tests/model/test_state_machine.py.
 *
 *   driver get|reset APP
 */
#include <deviceid.h>
#include <stdio.h>
#include <string.h>

#ifndef DEVICEID_FLAG_PROVISIONAL  /* a 0.2.0 header: the model is also run against 0.2.0 */
#define DEVICEID_FLAG_PROVISIONAL 64u
#endif

static int fail(int status) {
    printf("{\"error\":\"%s\"}\n", deviceid_status_name(status));
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: driver get|reset APP\n");
        return 2;
    }
    const char *app = argv[2];
    if (strcmp(argv[1], "reset") == 0) {
        int r = deviceid_reset(app);
        if (r < 0) return fail(r);
        printf("{\"reset\":true}\n");
        return 0;
    }
    char id[DEVICEID_UUID_STRING_MAX];
    int source = 0;
    unsigned int flags = 0;
    int r = deviceid_identifier(NULL, DEVICEID_SCOPE_APP, app, id, sizeof id, &source, &flags);
    if (r < 0) return fail(r);
    printf("{\"id\":\"%s\",\"source\":\"%s\",\"provisional\":%s,\"mirrored\":%s}\n", id, deviceid_source_name(source),
           flags & DEVICEID_FLAG_PROVISIONAL ? "true" : "false", flags & DEVICEID_FLAG_MIRRORED ? "true" : "false");
    return 0;
}
