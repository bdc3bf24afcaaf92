/* Prints this device's stable identifier for an app id, and where it came from.
 *
 *   cc app.c $(pkg-config --cflags --libs deviceid) -o app && ./app com.example.app
 */
#include <deviceid.h>
#include <stdio.h>

int main(int argc, char **argv) {
    const char *app = argc > 1 ? argv[1] : "com.example.app";
    char id[DEVICEID_UUID_STRING_MAX];
    int source = 0;
    int r = deviceid_identifier(NULL, DEVICEID_SCOPE_APP, app, id, sizeof id, &source, NULL);
    if (r < 0) {
        fprintf(stderr, "deviceid: %s (%s): %s\n", deviceid_strerror(r), deviceid_status_name(r),
                deviceid_last_error());
        return 1;
    }
    printf("%s %s\n", id, deviceid_source_name(source));
    return 0;
}
