/* Installed set-user-ID root by the hardening test and run by an unprivileged user with a hostile
 * environment. Prints what the library did: the raw machine ID it read, and the status of a get
 * (or of a reset, for clean-up).
 *
 *   setuid_probe get|reset APP
 */
#include <deviceid.h>
#include <deviceid-techniques.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    char out[DEVICEID_UUID_STRING_MAX];
    if (strcmp(argv[1], "reset") == 0) {
        printf("reset=%s\n", deviceid_status_name(deviceid_reset(argv[2])));
        return 0;
    }
    int r = deviceid_machine_id_raw(DEVICEID_FORMAT_COMPACT, out, sizeof out);
    printf("machine=%s\n", r == 0 ? out : deviceid_status_name(r));
    r = deviceid_get(argv[2], out, sizeof out);
    printf("get=%s %s\n", deviceid_status_name(r), r == 0 ? out : deviceid_last_error());
    return 0;
}
