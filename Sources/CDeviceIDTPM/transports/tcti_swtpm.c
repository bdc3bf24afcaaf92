// A software TPM (swtpm) on its two Unix sockets, PATH for TPM commands and PATH.ctrl for swtpm's
// own control commands: a TCTI of DeviceID's own (tss2_tcti.h's common context, version 1), in
// place of tpm2-tss's libtss2-tcti-swtpm, which a library cannot keep within a deadline or out of
// a forked child:
// - its connect() blocks, without end once swtpm's listen queue is full (a client holding swtpm's
//   one command connection, and the connections of the calls that timed out behind it, fill it),
//   and it reads the control socket's answer with a read() of no timeout (issue 34, case 1);
// - its sockets are born without close-on-exec, and a child forked while another thread was
//   between its socket() and connect() kept the connection the parent then used: swtpm, serving
//   one connection at a time, waited on the child's copy and served no one else (issue 35, case 6).
// Here every socket is non-blocking, close-on-exec and known to the fork handler from birth
// (dids_parent_only_socket, CDeviceIDSystem), shut down when its command ends, and every byte, connect() included, is
// waited for only until the conversation's deadline. Like tpm2-tss's, it connects anew for each
// command, so that other programs (tpm2-tools) take turns with it on the same swtpm.
#include "tcti.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#define MAGIC 0x4465766963654944ull  // "DeviceID"
#define CMD_SET_LOCALITY 5u          // swtpm's control protocol (swtpm_ioctls.h), as tpm2-tss sends it

struct swtpm_tcti {
    DIDS_TCTI_COMMON_V1
    // DeviceID's
    struct sockaddr_un command_address, control_address;
    uint64_t deadline_ms;
    int connection;         // the command under way's connection, or -1
    size_t received;        // of its answer, so far
    uint8_t answer[DIDS_TCTI_LARGEST];
};

// A connection to `address`, or -1 (errno; ETIMEDOUT at the deadline). A Unix socket connects at
// once or, its listener's queue full, fails with EAGAIN: tried again every 10 ms.
static int connect_by(const struct sockaddr_un *address, uint64_t deadline_ms) {
    int fd = dids_parent_only_socket();
    if (fd < 0) return -1;
    while (connect(fd, (const struct sockaddr *)address, sizeof *address) != 0) {
        int error = errno;
        if (error == EINTR) continue;
        if (error != EAGAIN || dids_tcti_now_ms() >= deadline_ms) {
            dids_parent_only_close_socket(fd);
            errno = error == EAGAIN ? ETIMEDOUT : error;
            return -1;
        }
        uint64_t now = dids_tcti_now_ms(), left = now < deadline_ms ? deadline_ms - now : 0;
        struct timespec a_while = {0, (long)(left < 10 ? left : 10) * 1000000L};
        int paused = dids_computing_pause();
        nanosleep(&a_while, NULL);
        dids_computing_resume(paused);
    }
    return fd;
}

// All of `data` to `fd` by the deadline: 0, or -1 (errno; ETIMEDOUT at the deadline).
static int send_all(int fd, const uint8_t *data, size_t size, uint64_t deadline_ms) {
    while (size > 0) {
        ssize_t n = send(fd, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) { data += n; size -= (size_t)n; continue; }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno != EAGAIN) return -1;
        int ready = dids_tcti_wait(fd, POLLOUT, deadline_ms);
        if (ready <= 0) { if (ready == 0) errno = ETIMEDOUT; return -1; }
    }
    return 0;
}

// Reads into `buffer` until `*have` reaches `want`, or `until_ms`: 1 complete, 0 the time is up,
// -1 an error or the end of the connection (errno; EPIPE for the end).
static int receive_until(int fd, uint8_t *buffer, size_t *have, size_t want, uint64_t until_ms) {
    while (*have < want) {
        ssize_t n = recv(fd, buffer + *have, want - *have, MSG_DONTWAIT);
        if (n > 0) { *have += (size_t)n; continue; }
        if (n == 0) { errno = EPIPE; return -1; }
        if (errno == EINTR) continue;
        if (errno != EAGAIN) return -1;
        int ready = dids_tcti_wait(fd, POLLIN, until_ms);
        if (ready <= 0) return ready;
    }
    return 1;
}

static struct swtpm_tcti *cast(TSS2_TCTI_CONTEXT *context) {
    struct swtpm_tcti *tcti = (struct swtpm_tcti *)context;
    return tcti && tcti->magic == MAGIC ? tcti : NULL;
}

// One exchange on the control socket (a 4-byte code and its parameters; a 4-byte result first in
// the answer), by the deadline. 0, or -1 (errno; ETIMEDOUT at the deadline, EPROTO a refusal).
static int control(struct swtpm_tcti *tcti, uint32_t code, const uint8_t *parameters, size_t size) {
    uint8_t request[8] = {(uint8_t)(code >> 24), (uint8_t)(code >> 16), (uint8_t)(code >> 8), (uint8_t)code};
    if (size > sizeof request - 4) { errno = EINVAL; return -1; }
    memcpy(request + 4, parameters, size);
    int fd = connect_by(&tcti->control_address, tcti->deadline_ms);
    if (fd < 0) return -1;
    uint8_t result[4];
    size_t have = 0;
    int outcome = send_all(fd, request, 4 + size, tcti->deadline_ms);
    if (outcome == 0) {
        int received = receive_until(fd, result, &have, sizeof result, tcti->deadline_ms);
        outcome = received == 1 ? 0 : -1;
        if (received == 0) errno = ETIMEDOUT;
    }
    int error = errno;
    dids_parent_only_close_socket(fd);
    if (outcome == 0 && dids_tcti_be32(result) != 0) { error = EPROTO; outcome = -1; }
    errno = error;
    return outcome;
}

// A command that cannot go on: its connection closed. At the deadline the caller says TIMED_OUT
// (the session words it so).
static TSS2_RC failed(struct swtpm_tcti *tcti) {
    dids_parent_only_close_socket(tcti->connection);
    tcti->connection = -1;
    return DIDS_TCTI_RC_IO_ERROR;
}

static TSS2_RC transmit(TSS2_TCTI_CONTEXT *context, size_t size, const uint8_t *command) {
    struct swtpm_tcti *tcti = cast(context);
    if (!tcti) return DIDS_TCTI_RC_BAD_CONTEXT;
    TSS2_RC refused = dids_tcti_refused_command(command, size);
    if (refused) return refused;
    if (tcti->connection >= 0) return DIDS_TCTI_RC_BAD_SEQUENCE;  // the previous answer was not collected
    tcti->connection = connect_by(&tcti->command_address, tcti->deadline_ms);
    if (tcti->connection < 0) return failed(tcti);
    tcti->received = 0;
    if (send_all(tcti->connection, command, size, tcti->deadline_ms) != 0) return failed(tcti);
    return 0;
}

// The answer, read until the deadline or ESAPI's `timeout` (ms; -1: none), whichever is first;
// TRY_AGAIN, keeping what came, when the time is up. With `response` NULL, its size.
static TSS2_RC receive(TSS2_TCTI_CONTEXT *context, size_t *size, uint8_t *response, int32_t timeout) {
    struct swtpm_tcti *tcti = cast(context);
    if (!tcti) return DIDS_TCTI_RC_BAD_CONTEXT;
    if (!size) return DIDS_TCTI_RC_BAD_REFERENCE;
    if (tcti->connection < 0) return DIDS_TCTI_RC_BAD_SEQUENCE;
    uint64_t until = tcti->deadline_ms;
    if (timeout >= 0 && dids_tcti_now_ms() + (uint64_t)timeout < until) until = dids_tcti_now_ms() + (uint64_t)timeout;
    int outcome = receive_until(tcti->connection, tcti->answer, &tcti->received, DIDS_TCTI_HEADER, until);
    if (outcome == 1) {
        uint32_t length = dids_tcti_be32(tcti->answer + 2);
        if (length < DIDS_TCTI_HEADER || length > DIDS_TCTI_LARGEST) {
            dids_parent_only_close_socket(tcti->connection);
            tcti->connection = -1;
            return DIDS_TCTI_RC_MALFORMED_RESPONSE;
        }
        outcome = receive_until(tcti->connection, tcti->answer, &tcti->received, length, until);
    }
    if (outcome == 0 && dids_tcti_now_ms() < tcti->deadline_ms) return DIDS_TCTI_RC_TRY_AGAIN;  // tcti.h
    if (outcome <= 0) return failed(tcti);
    TSS2_RC rc;
    if (dids_tcti_deliver(tcti->answer, tcti->received, size, response, &rc) == 0) {
        dids_parent_only_close_socket(tcti->connection);
        tcti->connection = -1;
    }
    return rc;
}

static void finalize(TSS2_TCTI_CONTEXT *context) {
    struct swtpm_tcti *tcti = cast(context);
    if (!tcti) return;
    dids_parent_only_close_socket(tcti->connection);
    tcti->connection = -1;
    tcti->magic = 0;
}

static TSS2_RC set_locality(TSS2_TCTI_CONTEXT *context, uint8_t locality) {
    struct swtpm_tcti *tcti = cast(context);
    if (!tcti) return DIDS_TCTI_RC_BAD_CONTEXT;
    if (tcti->connection >= 0) return DIDS_TCTI_RC_BAD_SEQUENCE;
    return control(tcti, CMD_SET_LOCALITY, &locality, 1) == 0 ? 0 : DIDS_TCTI_RC_IO_ERROR;
}

static int address_of(struct sockaddr_un *address, const char *path, const char *suffix) {
    memset(address, 0, sizeof *address);
    address->sun_family = AF_UNIX;
    size_t n = strlen(path), extra = strlen(suffix);
    if (path[0] != '/' || n + extra >= sizeof address->sun_path) return -1;
    memcpy(address->sun_path, path, n);
    memcpy(address->sun_path + n, suffix, extra);
    return 0;
}

TSS2_TCTI_CONTEXT *dids_tcti_swtpm_open(const char *path, uint64_t deadline_ms, TSS2_RC *rc) {
#ifdef DIDS_FUZZ_TPM
    if (dids_tcti_fuzz_fed()) return dids_tcti_fuzz_open(rc);
#endif
    struct swtpm_tcti *tcti = calloc(1, sizeof *tcti);
    if (!tcti) { *rc = 0; errno = ENOMEM; return NULL; }
    *tcti = (struct swtpm_tcti){
        .magic = MAGIC, .version = 1, .transmit = transmit, .receive = receive, .finalize = finalize,
        .cancel = dids_tcti_not_implemented, .get_poll_handles = dids_tcti_no_poll_handles, .set_locality = set_locality,
        .deadline_ms = deadline_ms, .connection = -1,
    };
    if (address_of(&tcti->command_address, path, "") != 0 || address_of(&tcti->control_address, path, ".ctrl") != 0) {
        free(tcti);
        *rc = DIDS_TCTI_RC_BAD_VALUE;
        errno = ENAMETOOLONG;
        return NULL;
    }
    // As tpm2-tss's TCTI opens: locality 0, which also says whether a swtpm answers there at all.
    uint8_t locality = 0;
    if (control(tcti, CMD_SET_LOCALITY, &locality, 1) != 0) {
        int error = errno;
        free(tcti);
        *rc = DIDS_TCTI_RC_IO_ERROR;
        errno = error;
        return NULL;
    }
    return (TSS2_TCTI_CONTEXT *)tcti;
}

void dids_tcti_swtpm_free(TSS2_TCTI_CONTEXT *context) {
    finalize(context);
    free(context);
}
