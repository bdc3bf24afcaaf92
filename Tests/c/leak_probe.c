/* Keyring work repeated N times, for a leak check under valgrind (Tests/python/test_transports.py):
 * what is lost must not grow with N, whichever library frame it is lost in (GLib, libsecret,
 * libdbus, DeviceID): each lookup of a missing item, store, lookup, delete, first-time get and
 * reset goes through the Secret Service and nothing else.
 *
 *   leak_probe N [fork]     with fork, the work runs in a child forked after the parent used
 *                           the keyring (the libdbus transport); exits 0, or 1 with a message
 */
#include <deviceid.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int work(int n) {
    for (int i = 0; i < n; i++) {
        void *data = NULL;
        size_t size = 0;
        char id[DEVICEID_UUID_STRING_MAX];
        int r = deviceid_secret_lookup(NULL, "leak.service", "missing", &data, &size);
        if (r != DEVICEID_E_NOT_FOUND) return fprintf(stderr, "lookup of a missing item: %d\n", r), 1;
        if ((r = deviceid_secret_store(NULL, "leak.service", "present", "v", 1)) != 0) return fprintf(stderr, "store: %d\n", r), 1;
        r = deviceid_secret_lookup(NULL, "leak.service", "present", &data, &size);
        if (r != 0 || size != 1) return fprintf(stderr, "lookup: %d\n", r), 1;
        deviceid_free(data);
        if ((r = deviceid_secret_delete(NULL, "leak.service", "present")) != 0) return fprintf(stderr, "delete: %d\n", r), 1;
        if ((r = deviceid_secret_delete(NULL, "leak.service", "present")) != DEVICEID_E_NOT_FOUND)
            return fprintf(stderr, "delete of a missing item: %d\n", r), 1;
        if ((r = deviceid_get("leak.app", id, sizeof id)) != 0) return fprintf(stderr, "get: %d\n", r), 1;
        if ((r = deviceid_reset("leak.app")) != 0) return fprintf(stderr, "reset: %d\n", r), 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    if (deviceid_set_backend(NULL, DEVICEID_BACKEND_SECRET_SERVICE) != 0) return 2;
    if (argc < 3 || strcmp(argv[2], "fork") != 0) return work(atoi(argv[1]));
    void *data = NULL;
    size_t size = 0;
    deviceid_secret_lookup(NULL, "leak.service", "missing", &data, &size);  /* GLib's D-Bus now runs here */
    pid_t child = fork();
    if (child == 0) _exit(work(atoi(argv[1])));
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
