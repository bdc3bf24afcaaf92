/* File-store lookups as the store grows: populate DIR with N app IDs (file backend), then time
 * uncached lookups of existing apps (the in-memory cache is dropped before each by re-setting
 * the store directory). Prints "N min median max" in ns.    filestore DIR N [LOOKUPS] */
#include <deviceid.h>

#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    int n = atoi(argv[2]), lookups = argc > 3 ? atoi(argv[3]) : 300;
    char id[DEVICEID_UUID_STRING_MAX], app[64];
    deviceid_set_backend(NULL, DEVICEID_BACKEND_FILE);
    deviceid_set_store_dir(NULL, argv[1]);
    for (int i = 0; i < n; i++) {
        snprintf(app, sizeof app, "app.%d", i);
        if (deviceid_get(app, id, sizeof id) != 0) return 1;
    }
    double *t = malloc(sizeof(double) * lookups);
    srand(42);
    for (int k = 0; k < lookups; k++) {
        snprintf(app, sizeof app, "app.%d", rand() % n);
        deviceid_set_store_dir(NULL, argv[1]); /* forget the cached answers */
        double start = now_ns();
        int source = 0;
        if (deviceid_identifier(NULL, DEVICEID_SCOPE_APP, app, id, sizeof id, &source, NULL) != 0 || source != DEVICEID_SOURCE_FILE) return 1;
        t[k] = now_ns() - start;
    }
    qsort(t, lookups, sizeof t[0], compare_doubles);
    printf("%d %.0f %.0f %.0f\n", n, t[0], t[lookups / 2], t[lookups - 1]);
    return 0;
}
