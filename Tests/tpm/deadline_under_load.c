// A TPM busy with other programs' commands, through the kernel's resource manager, which runs one
// command at a time, so a caller waits its turn: in the qemu guest
// (Tests/tpm/test_kernel_resource_manager.py). LOADERS processes make enrolment requests
// (deviceid_attest_enrolment: NV reads, a primary key) in a loop while this one asks for the
// hardware ID CALLS times, each with DEADLINE_MS. tpm2-tss's device
// TCTI, used until this round, sent a probe command at its initialisation and waited up to two
// seconds for it, whatever the deadline. A first call, with time to spare, loads tpm2-tss and
// libcrypto: loading a library is no conversation with the TPM, and no deadline can cut it short
// (a whole-suite run once had one call of 0.59 s, the first one being the likeliest).
// Prints one line:
//
//   calls=N ok=K timed_out=T other=O slowest_ms=MS first_ms=MS
//
//   deadline_under_load APP_ID LOADERS CALLS DEADLINE_MS
#include <deviceid.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_LOADERS 16

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: deadline_under_load APP_ID LOADERS CALLS DEADLINE_MS\n");
        return 2;
    }
    const char *app = argv[1];
    int loaders = atoi(argv[2]), calls = atoi(argv[3]);
    unsigned deadline_ms = (unsigned)strtoul(argv[4], NULL, 10);
    if (loaders < 1 || loaders > MAX_LOADERS || calls < 1) return 2;
    pid_t pids[MAX_LOADERS];
    for (int i = 0; i < loaders; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            deviceid_set_timeout_ms(NULL, 60000);
            for (;;) {
                char *request = NULL;
                if (deviceid_attest_enrolment(NULL, app, &request) == 0) deviceid_free(request);
            }
        }
    }
    usleep(300000);  // the loaders' first commands under way
    char warm[DEVICEID_UUID_STRING_MAX];
    double loading = now();
    int first = deviceid_hardware_id(NULL, app, warm, sizeof warm);  // the default deadline: libraries load
    loading = now() - loading;
    if (first != 0) fprintf(stderr, "first call: %s: %s\n", deviceid_strerror(first), deviceid_last_error());
    deviceid_set_timeout_ms(NULL, deadline_ms);
    int ok = 0, timed_out = 0, other = 0;
    double slowest = 0;
    for (int i = 0; i < calls; i++) {
        char id[DEVICEID_UUID_STRING_MAX];
        double started = now();
        int status = deviceid_hardware_id(NULL, app, id, sizeof id);
        double took = now() - started;
        if (took > slowest) slowest = took;
        if (status == 0) ok++;
        else if (status == DEVICEID_E_TIMED_OUT) timed_out++;
        else {
            other++;
            fprintf(stderr, "%s: %s\n", deviceid_strerror(status), deviceid_last_error());
        }
    }
    for (int i = 0; i < loaders; i++) {
        kill(pids[i], SIGKILL);
        waitpid(pids[i], NULL, 0);
    }
    printf("calls=%d ok=%d timed_out=%d other=%d slowest_ms=%.0f first_ms=%.0f\n", calls, ok, timed_out, other,
           slowest * 1000, loading * 1000);
    return 0;
}
