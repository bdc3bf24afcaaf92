// Children forked during TPM conversations, through the C library, where Python is not: in the
// qemu guest, on the kernel's resource manager (Tests/tpm/test_kernel_resource_manager.py; the
// swtpm socket's case is Tests/tpm/test_tpm_changes.py). A thread asks for the hardware ID in a
// loop while the main thread forks every 30 ms for SECONDS; each child waits for the loop's end,
// then asks once itself, one child at a time (a lock file: the guest is slow, and this is about
// what the children inherited, not about a queue of them). Prints one line:
//
//   calls=N slowest_ms=MS errors=E children=C agreed=A born_inside=B held=H
//
// where `agreed` counts the children whose own call answered the parent's ID within the
// deadline, `born_inside` the forks made while the thread was inside a call, and `held` the
// children that found, on their first instruction, a descriptor of the resource manager open:
// a copy of the parent's connection, which the library's fork handler must have closed.
//
//   fork_during_tpm_calls APP_ID SECONDS DEADLINE_MS LOCK_FILE
#define _GNU_SOURCE  // O_PATH
#include <deviceid.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CHILDREN 1024

static const char *app;
static double stop_at;
static atomic_int inside;
static int calls, errors;
static double slowest;
static char parent_id[DEVICEID_UUID_STRING_MAX];

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *parent_calls(void *unused) {
    (void)unused;
    while (now() < stop_at) {
        char id[DEVICEID_UUID_STRING_MAX];
        double started = now();
        atomic_store(&inside, 1);
        int status = deviceid_hardware_id(NULL, app, id, sizeof id);
        atomic_store(&inside, 0);
        double took = now() - started;
        if (took > slowest) slowest = took;
        calls++;
        if (status != 0 || strcmp(id, parent_id) != 0) {
            errors++;
            fprintf(stderr, "parent: %s: %s\n", deviceid_strerror(status), deviceid_last_error());
        }
    }
    return NULL;
}

// Whether this process has the device `rdev` open (an O_PATH descriptor, which the library holds
// while it asks what a path is, opens nothing).
static int holds_device(dev_t rdev) {
    DIR *fds = opendir("/proc/self/fd");
    if (!fds) return -1;
    int held = 0;
    for (struct dirent *entry; (entry = readdir(fds)) != NULL;) {
        struct stat status;
        int fd = atoi(entry->d_name);
        if (entry->d_name[0] != '.' && fstat(fd, &status) == 0 && S_ISCHR(status.st_mode) && status.st_rdev == rdev
            && !(fcntl(fd, F_GETFL) & O_PATH))
            held = 1;
    }
    closedir(fds);
    return held;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: fork_during_tpm_calls APP_ID SECONDS DEADLINE_MS LOCK_FILE\n");
        return 2;
    }
    app = argv[1];
    unsigned deadline_ms = (unsigned)strtoul(argv[3], NULL, 10);
    deviceid_set_timeout_ms(NULL, deadline_ms);
    // The first call before any fork: a child forked during another thread's first call may be
    // forked inside the load of tpm2-tss (deviceid.h, fork()); this is about conversations.
    int first = deviceid_hardware_id(NULL, app, parent_id, sizeof parent_id);
    if (first != 0) {
        fprintf(stderr, "first call: %s: %s\n", deviceid_strerror(first), deviceid_last_error());
        return 1;
    }
    struct stat device;
    if (stat("/dev/tpmrm0", &device) != 0) { perror("/dev/tpmrm0"); return 1; }
    stop_at = now() + strtod(argv[2], NULL);
    int phase_two[2];
    if (pipe(phase_two) != 0) return 1;
    pthread_t thread;
    if (pthread_create(&thread, NULL, parent_calls, NULL) != 0) return 1;
    pid_t children[MAX_CHILDREN];
    int count = 0, born_inside = 0;
    while (now() < stop_at && count < MAX_CHILDREN) {
        born_inside += atomic_load(&inside);
        pid_t pid = fork();
        if (pid == 0) {
            if (holds_device(device.st_rdev) != 0) _exit(3);
            close(phase_two[1]);
            char byte;
            (void)!read(phase_two[0], &byte, 1);  // EOF when the parent's loop has ended
            int lock = open(argv[4], O_RDWR | O_CREAT | O_CLOEXEC, 0600);
            if (lock < 0 || flock(lock, LOCK_EX) != 0) _exit(1);
            char id[DEVICEID_UUID_STRING_MAX];
            double started = now();
            int status = deviceid_hardware_id(NULL, app, id, sizeof id);
            int agreed = status == 0 && strcmp(id, parent_id) == 0 && now() - started < deadline_ms / 1000.0 + 0.5;
            if (!agreed) fprintf(stderr, "child: %s: %s\n", deviceid_strerror(status), deviceid_last_error());
            _exit(agreed ? 0 : 1);
        }
        if (pid > 0) children[count++] = pid;
        usleep(30000);
    }
    pthread_join(thread, NULL);
    close(phase_two[1]);
    int agreed = 0, held = 0;
    for (int i = 0; i < count; i++) {
        int status;
        if (waitpid(children[i], &status, 0) != children[i] || !WIFEXITED(status)) continue;
        agreed += WEXITSTATUS(status) == 0;
        held += WEXITSTATUS(status) == 3;
    }
    printf("calls=%d slowest_ms=%.0f errors=%d children=%d agreed=%d born_inside=%d held=%d\n", calls, slowest * 1000,
           errors, count, agreed, born_inside, held);
    return 0;
}
