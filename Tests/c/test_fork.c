/* A program that forks while another of its threads is inside deviceid_get(), as prefork
 * servers do. Each child must answer at once from what the parent already knew, and never hang
 * on a lock that a thread of the parent held at the moment of the fork.
 *
 *   test_fork APP_KNOWN   (run inside a keyring session, with DEVICEID_STORE_DIR set)
 * Prints one line per child and "fork: N passed, M failed".
 */
#include <deviceid.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;

static void *busy(void *arg) {
    (void)arg;
    char out[DEVICEID_UUID_STRING_MAX], name[64];
    for (int i = 0; !atomic_load(&stop); i++) {
        /* A new name each time: every call is a keyring conversation holding the session lock. */
        snprintf(name, sizeof name, "fork.busy.%d.%d", (int)getpid(), i);
        deviceid_get(name, out, sizeof out);
    }
    return NULL;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    char known[DEVICEID_UUID_STRING_MAX];
    int r = deviceid_get(argv[1], known, sizeof known);
    if (r != 0) { fprintf(stderr, "parent: %s\n", deviceid_status_name(r)); return 1; }
    pthread_t thread;
    pthread_create(&thread, NULL, busy, NULL);
    int passed = 0, failed = 0;
    for (int round = 0; round < 20; round++) {
        usleep(3000 + round * 1700);
        pid_t pid = fork();
        if (pid == 0) {
            alarm(20); /* a hang fails the test instead of blocking it */
            char out[DEVICEID_UUID_STRING_MAX];
            double start = now();
            /* Another thread: this one's cache does not hold the answer; the stores must. */
            int status = deviceid_get(argv[1], out, sizeof out);
            double elapsed = now() - start;
            int ok = status == 0 && strcmp(out, known) == 0 && elapsed < 1.0;
            /* And a new one: the child reaches the Secret Service itself (through libdbus). */
            char fresh[64], minted[DEVICEID_UUID_STRING_MAX];
            snprintf(fresh, sizeof fresh, "fork.child.%d.%d", (int)getpid(), round);
            start = now();
            int made = deviceid_get(fresh, minted, sizeof minted);
            double minting = now() - start;
            ok = ok && made == 0 && minting < 1.0;
            printf("child %d: %s %s %.3f s; new: %s %.3f s\n", round, deviceid_status_name(status),
                   status == 0 ? out : "-", elapsed, deviceid_status_name(made), minting);
            _exit(ok ? 0 : 1);
        }
        int wstatus = 0;
        waitpid(pid, &wstatus, 0);
        if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) passed++;
        else { failed++; printf("child %d failed (wait status %d)\n", round, wstatus); }
    }
    atomic_store(&stop, 1);
    pthread_join(thread, NULL);
    printf("fork: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
