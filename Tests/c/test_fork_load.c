/* A program that forks while another of its threads is inside DeviceID's first load of an
 * optional library (the TPM's; a stand-in whose constructor takes 400 ms: slow_library.c). The
 * child has that library half loaded, so it loads nothing more, and says so, instead of using it
 * as it is (include/deviceid.h, fork()). The control: a child forked after the load is over is
 * answered as its parent is (the stand-in is "too old"), without those words.
 *
 *   test_fork_load   (LD_LIBRARY_PATH with the stand-in libtss2-esys.so.0 first)
 * Prints "fork-load: N passed, M failed".
 */
#include <deviceid.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int passed, failed;
#define CHECK(c) do { if (c) passed++; else { failed++; fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); } } while (0)

static const char *words = "forked while another thread of its parent was loading a library";
static int first_status;

static void *first_tpm_call(void *arg) {
    (void)arg;
    char id[DEVICEID_UUID_STRING_MAX];
    first_status = deviceid_hardware_id(NULL, "com.example.fork-load", id, sizeof id);
    return NULL;
}

/* The child's own TPM call: 0 when it is UNAVAILABLE and its words do (1) or do not (0) say it
 * was forked during a load, as `expect_forked` wants; 1 otherwise; killed if it never returns. */
static int child_call(int expect_forked) {
    pid_t child = fork();
    if (child == 0) {
        alarm(5);
        char id[DEVICEID_UUID_STRING_MAX];
        int status = deviceid_hardware_id(NULL, "com.example.fork-load", id, sizeof id);
        int forked = strstr(deviceid_last_error(), words) != NULL;
        if (status != DEVICEID_E_UNAVAILABLE || forked != expect_forked)
            fprintf(stderr, "child: %s: %s\n", deviceid_status_name(status), deviceid_last_error());
        _exit(status == DEVICEID_E_UNAVAILABLE && forked == expect_forked ? 0 : 1);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(void) {
    int ready[2];
    if (pipe(ready) != 0) return 2;
    char fd[16];
    snprintf(fd, sizeof fd, "%d", ready[1]);
    setenv("SLOW_LIBRARY_READY_FD", fd, 1);
    pthread_t thread;
    if (pthread_create(&thread, NULL, first_tpm_call, NULL) != 0) return 2;
    char byte;
    CHECK(read(ready[0], &byte, 1) == 1);   /* the thread is inside dlopen() now */
    CHECK(child_call(1) == 0);
    pthread_join(thread, NULL);
    CHECK(first_status == DEVICEID_E_UNAVAILABLE);
    CHECK(strstr(deviceid_last_error(), words) == NULL);
    CHECK(child_call(0) == 0);
    printf("fork-load: %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
