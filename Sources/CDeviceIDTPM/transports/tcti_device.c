// The kernel's TPM resource manager (/dev/tpmrm0): a TCTI of DeviceID's own (tss2_tcti.h's common
// context, version 1), in place of tpm2-tss's libtss2-tcti-device, which a library cannot keep
// within a deadline or out of a forked child:
// - its initialisation probes the TPM (a command, then up to two waits of a second each) before
//   any deadline applies, so a TPM busy with another program's command held the caller past its
//   own (issue 34), and fork() waited for its later waits, which run inside ESAPI's computing;
// - it opens the device by its path, after DeviceID had asked what the path is, and without
//   close-on-exec: a child forked between that open() and DeviceID's adoption of the descriptor
//   kept the parent's connection, and the resource manager its objects (issue 35, case 6).
// Here the path is opened once, O_PATH (opening some devices acts: a watchdog armed, a tape
// rewound), the kernel says what it is (fstat, /sys/dev/char), and only a resource manager is then
// opened for reading and writing — that very file, through /proc/self/fd — non-blocking,
// close-on-exec and known to the fork handler from birth (dids_parent_only_open, CDeviceIDSystem). A command is written
// whole; the kernel runs it on its work queue (Linux 4.20 and later; an older kernel runs it within
// write()) and poll() says when the answer is there, which is read whole. The connection lasts the
// conversation: the resource manager keeps a connection's transient objects for it alone.
#define _GNU_SOURCE  // O_PATH
#include "tcti.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define MAGIC 0x4449446576696365ull  // "DIDevice"

struct device_tcti {
    DIDS_TCTI_COMMON_V1
    // DeviceID's
    uint64_t deadline_ms;
    int fd;
    int pending;      // a command was written whose answer has not been read
    size_t received;  // an answer read and kept for the next receive, or 0
    uint8_t answer[DIDS_TCTI_LARGEST];
};

static struct device_tcti *cast(TSS2_TCTI_CONTEXT *context) {
    struct device_tcti *tcti = (struct device_tcti *)context;
    return tcti && tcti->magic == MAGIC ? tcti : NULL;
}

// What a file is, by the kernel's account, never by its name: a symbolic link named tpmrm0 to
// /dev/tpm0 or /dev/null is what it points to. The class of character device `rdev` (its sysfs
// subsystem's name) into `out`; 0, or -1.
static int char_device_class(dev_t rdev, char *out, size_t size) {
    char link[64], target[256];
    snprintf(link, sizeof link, "/sys/dev/char/%u:%u/subsystem", major(rdev), minor(rdev));
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n < 0) return -1;
    target[n] = '\0';
    const char *class = strrchr(target, '/');
    snprintf(out, size, "%s", class ? class + 1 : target);
    return 0;
}

int dids_tpm_device_class(const char *path, char *out, size_t size) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISCHR(st.st_mode)) return -1;
    return char_device_class(st.st_rdev, out, size);
}

// A DIDS_TPM_DEVICE_* for the file `status` describes, opened at `path`. Where sysfs is not
// mounted (a minimal container), the name is all there is: a character device whose resolved
// path is named tpmrm* passes (a link named tpmrm0 to /dev/tpm0 is judged as "tpm0").
static int device_kind(const struct stat *status, const char *path) {
    if (!S_ISCHR(status->st_mode)) return DIDS_TPM_DEVICE_NOT_CHARACTER;
    char class[64];
    if (char_device_class(status->st_rdev, class, sizeof class) != 0) {
        if (access("/sys/dev/char", F_OK) == 0) return DIDS_TPM_DEVICE_UNKNOWN;
        char *resolved = realpath(path, NULL);
        const char *name = resolved ? strrchr(resolved, '/') : NULL;
        int named = name && strncmp(name + 1, "tpmrm", 5) == 0;
        free(resolved);
        return named ? DIDS_TPM_DEVICE_RESOURCE_MANAGER : DIDS_TPM_DEVICE_UNKNOWN;
    }
    if (strcmp(class, "tpmrm") == 0) return DIDS_TPM_DEVICE_RESOURCE_MANAGER;
    return strcmp(class, "tpm") == 0 ? DIDS_TPM_DEVICE_RAW : DIDS_TPM_DEVICE_OTHER;
}

// The device the O_PATH descriptor `handle` (at `path`, described by `status`) is, opened for
// commands and tracked; -1 and errno. Through /proc/self/fd, which opens that very file; where
// /proc is not mounted, by the path again, kept only if it is still the same device.
static int open_checked(int handle, const char *path, const struct stat *status) {
    char self[32];
    snprintf(self, sizeof self, "/proc/self/fd/%d", handle);
    int fd = dids_parent_only_open(self, O_RDWR | O_NONBLOCK);
    if (fd >= 0 || errno != ENOENT || access("/proc/self/fd", F_OK) == 0) return fd;
    fd = dids_parent_only_open(path, O_RDWR | O_NONBLOCK);
    struct stat opened;
    if (fd >= 0 && (fstat(fd, &opened) != 0 || !S_ISCHR(opened.st_mode) || opened.st_rdev != status->st_rdev)) {
        dids_parent_only_close(fd, 0);
        errno = ENXIO;  // the path names another file than was checked a moment ago
        return -1;
    }
    return fd;
}

static TSS2_RC transmit(TSS2_TCTI_CONTEXT *context, size_t size, const uint8_t *command) {
    struct device_tcti *tcti = cast(context);
    if (!tcti) return DIDS_TCTI_RC_BAD_CONTEXT;
    TSS2_RC refused = dids_tcti_refused_command(command, size);
    if (refused) return refused;
    if (tcti->pending || tcti->received) return DIDS_TCTI_RC_BAD_SEQUENCE;  // the previous answer was not collected
    // An older kernel runs the command within write(): waiting, not computing (dids_computing_pause).
    int paused = dids_computing_pause();
    ssize_t n;
    do n = write(tcti->fd, command, size);
    while (n < 0 && errno == EINTR);
    dids_computing_resume(paused);
    if (n != (ssize_t)size) return DIDS_TCTI_RC_IO_ERROR;
    tcti->pending = 1;
    return 0;
}

// The answer, waited for until the deadline or ESAPI's `timeout` (ms; -1: none), whichever is
// first; TRY_AGAIN while the deadline is ahead (tcti.h). With `response` NULL, its size.
static TSS2_RC receive(TSS2_TCTI_CONTEXT *context, size_t *size, uint8_t *response, int32_t timeout) {
    struct device_tcti *tcti = cast(context);
    if (!tcti) return DIDS_TCTI_RC_BAD_CONTEXT;
    if (!size) return DIDS_TCTI_RC_BAD_REFERENCE;
    if (!tcti->received) {
        if (!tcti->pending) return DIDS_TCTI_RC_BAD_SEQUENCE;
        uint64_t now = dids_tcti_now_ms(), until = tcti->deadline_ms;
        if (timeout >= 0 && now + (uint64_t)timeout < until) until = now + (uint64_t)timeout;
        int ready = dids_tcti_wait(tcti->fd, POLLIN, until);
        ssize_t n = -1;
        if (ready > 0) {
            do n = read(tcti->fd, tcti->answer, sizeof tcti->answer);
            while (n < 0 && errno == EINTR);
        }
        if ((ready == 0 || (n < 0 && errno == EAGAIN)) && dids_tcti_now_ms() < tcti->deadline_ms) return DIDS_TCTI_RC_TRY_AGAIN;
        if (n < 0) return DIDS_TCTI_RC_IO_ERROR;
        tcti->pending = 0;
        if (n < DIDS_TCTI_HEADER || dids_tcti_be32(tcti->answer + 2) != (uint32_t)n) return DIDS_TCTI_RC_MALFORMED_RESPONSE;
        tcti->received = (size_t)n;
    }
    TSS2_RC rc;
    if (dids_tcti_deliver(tcti->answer, tcti->received, size, response, &rc) == 0) tcti->received = 0;
    return rc;
}

static void finalize(TSS2_TCTI_CONTEXT *context) {
    struct device_tcti *tcti = cast(context);
    if (!tcti) return;
    dids_parent_only_close(tcti->fd, tcti->pending);
    tcti->fd = -1;
    tcti->magic = 0;
}

static TSS2_RC set_locality(TSS2_TCTI_CONTEXT *context, uint8_t locality) {
    (void)locality;  // the kernel's driver chooses the locality
    return dids_tcti_not_implemented(context);
}

TSS2_TCTI_CONTEXT *dids_tcti_device_open(const char *path, uint64_t deadline_ms, int *kind) {
    int handle = open(path, O_PATH | O_CLOEXEC);
    if (handle < 0) return NULL;
    struct stat status;
    *kind = fstat(handle, &status) == 0 ? device_kind(&status, path) : DIDS_TPM_DEVICE_NOT_CHARACTER;
    if (*kind != DIDS_TPM_DEVICE_RESOURCE_MANAGER) {
        close(handle);
        errno = ENODEV;
        return NULL;
    }
    struct device_tcti *tcti = calloc(1, sizeof *tcti);
    int fd = tcti ? open_checked(handle, path, &status) : -1;
    int error = tcti ? errno : ENOMEM;
    close(handle);
    if (fd < 0) {
        free(tcti);
        errno = error;
        return NULL;
    }
    *tcti = (struct device_tcti){
        .magic = MAGIC, .version = 1, .transmit = transmit, .receive = receive, .finalize = finalize,
        .cancel = dids_tcti_not_implemented, .get_poll_handles = dids_tcti_no_poll_handles,
        .set_locality = set_locality, .deadline_ms = deadline_ms, .fd = fd,
    };
    return (TSS2_TCTI_CONTEXT *)tcti;
}

void dids_tcti_device_free(TSS2_TCTI_CONTEXT *context) {
    finalize(context);
    free(context);
}
