/* Stores, looks up and frees one secret, wipes its own copies, then waits to be dumped (gcore):
 * the test searches the core for the secret, which must appear nowhere.
 *
 *   secret_hygiene file|keyring CANARY  < SECRET    prints "ready" once done, then waits for a signal
 *
 * CANARY, reversed, is kept on the heap: the test finds it in the dump, which shows that the dump
 * holds the heap, where the library's copies of the secret would be (reversed, it matches nowhere
 * else, not argv).
 */
#include <deviceid.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *volatile kept_canary;

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    size_t canary_length = strlen(argv[2]);
    char *canary = malloc(canary_length + 1);
    if (canary == NULL) return 2;
    for (size_t i = 0; i < canary_length; i++) canary[i] = argv[2][canary_length - 1 - i];
    canary[canary_length] = '\0';
    kept_canary = canary;
    int backend = strcmp(argv[1], "file") == 0 ? DEVICEID_BACKEND_FILE : DEVICEID_BACKEND_SECRET_SERVICE;
    char secret[256];
    ssize_t n = read(STDIN_FILENO, secret, sizeof secret);
    if (n <= 0) return 2;
    if (deviceid_set_backend(NULL, backend) != 0) return 3;
    int r = deviceid_secret_store(NULL, "hygiene.service", "hygiene.account", secret, (size_t)n);
    if (r != 0) { fprintf(stderr, "store: %s %s\n", deviceid_status_name(r), deviceid_last_error()); return 1; }
    void *data = NULL;
    size_t size = 0;
    r = deviceid_secret_lookup(NULL, "hygiene.service", "hygiene.account", &data, &size);
    if (r != 0 || size != (size_t)n || memcmp(data, secret, size) != 0) { fprintf(stderr, "lookup: %d\n", r); return 1; }
    deviceid_free(data);
    explicit_bzero(secret, sizeof secret);
    printf("ready\n");
    fflush(stdout);
    pause();
    return 0;
}
