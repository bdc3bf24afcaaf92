// One conversation with the TPM: ESAPI comes through the loader (DIDS_LIBRARY_TPM). A device's
// TCTI module is loaded here, directly, as systemd does: tss2's TCTI loader would fall back to
// /dev/tpm0, which bypasses the kernel's resource manager. A swtpm is DeviceID's own TCTI
// (tcti_swtpm.c).
#define _GNU_SOURCE  // O_PATH
#include "tpm_internal.h"
#include "loader.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

DIDS_POINTERS(DIDS_TPM_FUNCTIONS)
DIDS_LOADABLE(dids_tpm_loadable, DIDS_TPM_FUNCTIONS, "libtss2-esys.so.0",
              "libtss2-esys-3.0.2-0, libtss2-esys-3.0.2-0t64 on Debian 13", "tpm2-tss 3.2.1");

int dids_tpm_fail(struct dids_tpm_failure *failure, int stage, uint32_t rc, int error_number) {
    failure->stage = stage;
    failure->rc = rc;
    failure->error_number = error_number;
    return 0;
}

static uint64_t now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u;
}

#define DEVICE_SLICE_MS 20u

int dids_tpm_arm(dids_tpm *tpm) {
    uint64_t now = now_ms();
    if (now >= tpm->deadline_ms) { tpm->stuck = 1; return -1; }
    uint64_t left = tpm->deadline_ms - now;
    // The device TCTI waits for the TPM inside ESAPI's computing (tpm_descriptors.c), so in slices:
    // a fork() meanwhile waits for one slice, not for the TPM's command; TRY_AGAIN resumes it.
    if (!tpm->software && left > DEVICE_SLICE_MS) left = DEVICE_SLICE_MS;
    dids_p_Esys_SetTimeout(tpm->esys, left > INT32_MAX ? INT32_MAX : (int32_t)left);
    return 0;
}

int dids_tpm_fail_command(dids_tpm *tpm, struct dids_tpm_failure *failure, int stage, uint32_t rc) {
    if (now_ms() >= tpm->deadline_ms) {
        tpm->stuck = 1;
        return dids_tpm_fail(failure, DIDS_TPM_STAGE_TIMED_OUT, rc, 0);
    }
    return dids_tpm_fail(failure, stage, rc, 0);
}

// The descriptors open now, as a sorted list read from /proc/self/fd (NULL where it cannot be read).
static int *open_descriptors(size_t *count) {
    *count = 0;
    DIR *directory = opendir("/proc/self/fd");
    if (!directory) return NULL;
    size_t capacity = 64;
    int *fds = malloc(capacity * sizeof *fds);
    struct dirent *entry;
    while (fds && (entry = readdir(directory)) != NULL) {
        if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
        if (*count == capacity) {
            int *grown = realloc(fds, (capacity *= 2) * sizeof *fds);
            if (!grown) { free(fds); fds = NULL; break; }
            fds = grown;
        }
        fds[(*count)++] = atoi(entry->d_name);
    }
    closedir(directory);
    return fds;
}

static int listed(const int *fds, size_t count, int fd) {
    for (size_t i = 0; i < count; i++)
        if (fds[i] == fd) return 1;
    return 0;
}

// The device TCTI opens /dev/tpmrm0 without O_CLOEXEC: a program that forks and executes while a
// conversation is open would hand the TPM connection (and its objects in the resource manager)
// to the child. The descriptors that appeared during the TCTI's initialisation and are this
// device are made close-on-exec, and tracked for a fork without exec (tpm_descriptors.c); another
// thread's descriptor opened meanwhile is left alone.
static void adopt_device(dids_tpm *tpm, const char *config, const int *before, size_t before_count) {
    struct stat device;
    size_t after_count, kept = 0;
    if (!before || stat(config, &device) != 0) return;
    int *after = open_descriptors(&after_count);
    for (size_t i = 0; after && i < after_count; i++) {
        struct stat status;
        int fd = after[i];
        if (listed(before, before_count, fd) || fstat(fd, &status) != 0 || !S_ISCHR(status.st_mode)
            || status.st_rdev != device.st_rdev)
            continue;
        (void)fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC);
        if (kept < sizeof tpm->descriptors / sizeof tpm->descriptors[0] && dids_tpm_track(fd) == 0)
            tpm->descriptors[kept++] = fd;
    }
    free(after);
}

void dids_tpm_flush(dids_tpm *tpm, ESYS_TR *handle) {
    if (*handle == DIDS_ESYS_TR_NONE) return;
    struct dids_tpm_failure ignored;
    if (!tpm->stuck)
        (void)DIDS_TPM_RUN(tpm, &ignored, DIDS_TPM_STAGE_NONE, dids_p_Esys_FlushContext_Async(tpm->esys, *handle),
                           dids_p_Esys_FlushContext_Finish(tpm->esys));
    *handle = DIDS_ESYS_TR_NONE;
}

void dids_tpm_forget(dids_tpm *tpm, ESYS_TR *handle) {
    if (*handle == DIDS_ESYS_TR_NONE) return;
    dids_tpm_compute_begin();
    dids_p_Esys_TR_Close(tpm->esys, handle);  // an ESAPI handle only: nothing to flush in the TPM
    dids_tpm_compute_end();
    *handle = DIDS_ESYS_TR_NONE;
}

int dids_tpm_put(struct dids_tpm_bytes *out, const void *data, size_t size, int stage, struct dids_tpm_failure *failure) {
    if (!out) return 1;
    out->size = size;
    if (size > out->capacity) return dids_tpm_fail(failure, stage, 0, ENOBUFS);
    if (size) memcpy(out->data, data, size);
    return 1;
}

// TSS2_TCTI_CONTEXT_COMMON_V1: uint64 magic, uint32 version, then function pointers; finalize is
// the third (tss2_tcti.h; checked in Tests/c/check_tpm_layout.c). Read through memcpy: the
// context is the module's memory.
static void finalize_tcti(TSS2_TCTI_CONTEXT *tcti) {
    if (!tcti) return;
    void (*finalize)(TSS2_TCTI_CONTEXT *);
    memcpy(&finalize, (const char *)tcti + 16 + 2 * sizeof(void *), sizeof finalize);
    if (finalize) finalize(tcti);
    free(tcti);
}

// The device TCTI module, opened once and kept (as the loader keeps libraries).
static TSS2_TCTI_INFO_FUNC device_tcti_info(void) {
    static void *device;
    void **handle = &device;
    if (!__atomic_load_n(handle, __ATOMIC_ACQUIRE)) {
        void *opened = dids_library_dlopen("libtss2-tcti-device.so.0");
        if (!opened) { errno = dids_library_forked_during_a_load() ? EAGAIN : ENOENT; return NULL; }
        void *expected = NULL;
        if (!__atomic_compare_exchange_n(handle, &expected, opened, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            dlclose(opened);  // another thread's is kept
    }
    void *symbol = dlsym(__atomic_load_n(handle, __ATOMIC_ACQUIRE), "Tss2_Tcti_Info");
    if (!symbol) { errno = ENOSYS; return NULL; }
    TSS2_TCTI_INFO_FUNC info;
    memcpy(&info, &symbol, sizeof info);
    return info;
}

// What the file open at `fd` is, by the kernel's account, never by its name: a symbolic link
// named tpmrm0 to /dev/tpm0 or /dev/null is what it points to. Where sysfs is not mounted (a
// minimal container), the name is all there is: a character device whose resolved path is named
// tpmrm* passes (a link named tpmrm0 to /dev/tpm0 is judged as "tpm0").
// The class of character device `rdev` (its sysfs subsystem's name) into `out`; 0, or -1.
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

static int device_kind(int fd, const char *path) {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode)) return DIDS_TPM_DEVICE_NOT_CHARACTER;
    char class[64];
    if (char_device_class(st.st_rdev, class, sizeof class) != 0) {
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

// The device: path's checks before the TCTI opens it, none of which opens a device: opening one
// can act (a watchdog armed by open and fired at a close without its magic byte, a tape rewound,
// a serial line's DTR raised), so what the path is is asked of an O_PATH descriptor, and only a
// resource manager goes on. Then "no TPM" (ENOENT) and "not allowed" (EACCES) are told apart
// exactly, which the device TCTI's own open() loses in its logging: access with the effective
// IDs, as the TCTI's open will use. 0, or -1 with `failure` set.
static int check_device(const char *path, struct dids_tpm_failure *failure) {
    int handle = open(path, O_PATH | O_CLOEXEC);
    if (handle < 0) { dids_tpm_fail(failure, DIDS_TPM_STAGE_TCTI_INIT, 0, errno); return -1; }
    int kind = device_kind(handle, path);
    close(handle);
    if (kind != DIDS_TPM_DEVICE_RESOURCE_MANAGER) {
        dids_tpm_fail(failure, DIDS_TPM_STAGE_DEVICE_KIND, (uint32_t)kind, 0);
        return -1;
    }
    if (faccessat(AT_FDCWD, path, R_OK | W_OK, AT_EACCESS) != 0) {
        dids_tpm_fail(failure, DIDS_TPM_STAGE_TCTI_INIT, 0, errno);
        return -1;
    }
    return 0;
}


// One initialisation of the device TCTI at a time: the descriptors that appear during one are
// then its own, not another conversation's opened meanwhile (which would be tracked twice, and
// closed in a child after their number was reused). Made free again in a child.
static pthread_mutex_t initialising = PTHREAD_MUTEX_INITIALIZER;
static void free_in_child(void) { pthread_mutex_init(&initialising, NULL); }
__attribute__((constructor)) static void install_fork_handler(void) { (void)pthread_atfork(NULL, NULL, free_in_child); }

// The device TCTI (libtss2-tcti-device), initialised on `config` (a path checked by check_device)
// and its descriptors adopted; NULL with `failure` set.
static TSS2_TCTI_CONTEXT *open_device(dids_tpm *tpm, const char *config, uint64_t deadline_ms,
                                      struct dids_tpm_failure *failure) {
    if (check_device(config, failure) != 0) return NULL;
    TSS2_TCTI_INFO_FUNC info = device_tcti_info();
    if (!info) { dids_tpm_fail(failure, DIDS_TPM_STAGE_TCTI_LOAD, 0, errno); return NULL; }
    const TSS2_TCTI_INFO *module = info();
    size_t size = 0;
    TSS2_RC rc;
    if (!module || !module->init || (rc = module->init(NULL, &size, config)) != 0) {
        dids_tpm_fail(failure, DIDS_TPM_STAGE_TCTI_INIT, module && module->init ? rc : 0, 0);
        return NULL;
    }
    TSS2_TCTI_CONTEXT *tcti = calloc(1, size);
    if (!tcti) { dids_tpm_fail(failure, DIDS_TPM_STAGE_TCTI_INIT, 0, ENOMEM); return NULL; }
    // Another thread's initialisation (a TPM busy with another program's command) is waited for
    // only until this call's deadline.
    uint64_t now = now_ms(), left = deadline_ms > now ? deadline_ms - now : 0;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)(left / 1000u);
    until.tv_nsec += (long)(left % 1000u) * 1000000L;
    if (until.tv_nsec >= 1000000000L) { until.tv_sec += 1; until.tv_nsec -= 1000000000L; }
    if (pthread_mutex_timedlock(&initialising, &until) != 0) {
        dids_tpm_fail(failure, DIDS_TPM_STAGE_TIMED_OUT, 0, 0);
        free(tcti);
        return NULL;
    }
    size_t before_count = 0;
    int *before = open_descriptors(&before_count);
    errno = 0;
    if ((rc = module->init(tcti, &size, config)) != 0) {
        dids_tpm_fail(failure, DIDS_TPM_STAGE_TCTI_INIT, rc, errno);
        free(tcti);
        tcti = NULL;
    } else {
        adopt_device(tpm, config, before, before_count);
    }
    pthread_mutex_unlock(&initialising);
    free(before);
    return tcti;
}

dids_tpm *dids_tpm_open(const char *driver, const char *config, uint64_t deadline_ms, struct dids_tpm_failure *failure) {
    dids_tpm_fail(failure, DIDS_TPM_STAGE_NONE, 0, 0);
    int software = strcmp(driver, "swtpm") == 0;
    if (!software && strcmp(driver, "device") != 0) { dids_tpm_fail(failure, DIDS_TPM_STAGE_TCTI_LOAD, 0, EINVAL); return NULL; }
    if (software && strncmp(config, "path=", 5) != 0) {
        dids_tpm_fail(failure, DIDS_TPM_STAGE_TCTI_INIT, 0, EINVAL);
        return NULL;
    }
    dids_tpm *tpm = calloc(1, sizeof *tpm);
    if (!tpm) { dids_tpm_fail(failure, DIDS_TPM_STAGE_TCTI_INIT, 0, ENOMEM); return NULL; }
    for (size_t i = 0; i < sizeof tpm->descriptors / sizeof tpm->descriptors[0]; i++) tpm->descriptors[i] = -1;
    tpm->software = software;
    tpm->deadline_ms = deadline_ms;
    tpm->tcti = software ? dids_tcti_swtpm_open(config + 5, deadline_ms, failure)
                         : open_device(tpm, config, deadline_ms, failure);
    if (!tpm->tcti) { free(tpm); return NULL; }
    dids_tpm_compute_begin();
    TSS2_RC rc = dids_p_Esys_Initialize(&tpm->esys, tpm->tcti, NULL);
    dids_tpm_compute_end();
    if (rc != 0) {
        dids_tpm_fail(failure, DIDS_TPM_STAGE_ESYS, rc, 0);
        dids_tpm_close(tpm);
        return NULL;
    }
    return tpm;
}

// A bare swtpm may not have been started; the kernel's resource manager has started its TPM.
// A command like any other, under the conversation's deadline.
int dids_tpm_startup(dids_tpm *tpm, struct dids_tpm_failure *failure) {
    if (!tpm->software) return 0;
    struct dids_tpm_failure startup;
    if (!DIDS_TPM_RUN(tpm, &startup, DIDS_TPM_STAGE_STARTUP, dids_p_Esys_Startup_Async(tpm->esys, DIDS_TPM2_SU_CLEAR),
                      dids_p_Esys_Startup_Finish(tpm->esys))
        && !(startup.stage == DIDS_TPM_STAGE_STARTUP && (startup.rc & 0xfffu) == DIDS_TPM2_RC_INITIALIZE)) {
        *failure = startup;
        return -1;
    }
    return 0;
}

static void *finalize(void *argument) {
    dids_tpm *tpm = argument;
    // Untracked before the TCTI closes them: a number closed and then reused by another part of
    // the program must not be closed in a child.
    for (size_t i = 0; i < sizeof tpm->descriptors / sizeof tpm->descriptors[0]; i++)
        if (tpm->descriptors[i] >= 0) dids_tpm_untrack(tpm->descriptors[i]);
    if (tpm->esys) {
        dids_tpm_compute_begin();
        dids_p_Esys_Finalize(&tpm->esys);
        dids_tpm_compute_end();
    }
    if (tpm->software) dids_tcti_swtpm_free(tpm->tcti);
    else finalize_tcti(tpm->tcti);
    free(tpm);
    return NULL;
}

void dids_tpm_close(dids_tpm *tpm) {
    if (!tpm) return;
    // A command abandoned at the deadline may still be running in the TPM: closing /dev/tpmrm0
    // then waits in the kernel for it (tpm_common_release flushes the pending work). The caller
    // has its answer (TIMED_OUT) now; the connection is closed on a thread of its own.
    if (tpm->stuck) {
        pthread_attr_t attributes;
        pthread_t thread;
        if (pthread_attr_init(&attributes) == 0) {
            int started = pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED) == 0
                       && pthread_create(&thread, &attributes, finalize, tpm) == 0;
            pthread_attr_destroy(&attributes);
            if (started) return;
        }
    }
    finalize(tpm);
}
