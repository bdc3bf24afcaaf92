// One conversation with the TPM: ESAPI comes through the loader (DIDS_LIBRARY_TPM); the TCTI
// module the caller's TCTI string names is loaded here, directly, as systemd does: tss2's TCTI
// loader would fall back to /dev/tpm0, which bypasses the kernel's resource manager.
#define _GNU_SOURCE  // O_PATH
#include "tpm_internal.h"
#include "loader.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
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

int dids_tpm_arm(dids_tpm *tpm) {
    uint64_t now = now_ms();
    if (now >= tpm->deadline_ms) { tpm->stuck = 1; return -1; }
    uint64_t left = tpm->deadline_ms - now;
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

// What a child forked during a conversation must not keep. A child inherits the parent's
// descriptors, and the thread that owns a conversation is not in it: on a swtpm, which serves one
// connection at a time, a child's copy of the parent's command socket kept the connection open
// after the parent was done, so every later call of either, the child's own first included,
// waited for swtpm forever (issue 35, case 6). A pthread_atfork child handler therefore closes,
// in the child:
// - the descriptors the device TCTI opened for a conversation (tracked after its initialisation);
// - every socket connected to a swtpm socket a conversation is using: the TCTI connects inside
//   its initialisation, before any list could be told, so the child looks them up by their peer
//   (as dids_tpm_interrupt does). The path is registered before the TCTI connects.
// Slots are atomic: the handler runs in a child forked at any point of another thread's update.
#define DIDS_TPM_TRACKED 64
#define DIDS_TPM_PATHS 8
static _Atomic int tracked[DIDS_TPM_TRACKED];  // fd + 1; 0: free
static _Atomic int path_in_use[DIDS_TPM_PATHS];
static char active_paths[DIDS_TPM_PATHS][108];
// One TCTI initialisation at a time: the descriptors that appear during one are then its own, not
// another conversation's opened meanwhile (which would be tracked twice, and closed in a child
// after their number was reused). Made free again in a child.
static pthread_mutex_t initialising = PTHREAD_MUTEX_INITIALIZER;

static int is_swtpm_socket(int fd, const char *path, int with_control);

static void close_in_child(void) {
    pthread_mutex_init(&initialising, NULL);
    for (size_t i = 0; i < DIDS_TPM_TRACKED; i++) {
        int slot = atomic_exchange(&tracked[i], 0);
        if (slot > 0) (void)close(slot - 1);
    }
    for (size_t p = 0; p < DIDS_TPM_PATHS; p++) {
        if (atomic_load(&path_in_use[p]) != 1) continue;
        size_t count;
        int *fds = open_descriptors(&count);
        for (size_t i = 0; fds && i < count; i++)
            if (is_swtpm_socket(fds[i], active_paths[p], 1)) (void)close(fds[i]);
        free(fds);
        atomic_store(&path_in_use[p], 0);
    }
}

// Registered when the library is loaded: fork() runs only the handlers registered before it began
// (glibc counts them, then runs the prepare handlers with its lock released), so one registered by
// another thread's first call during a fork was skipped in that child (docs/ROBUSTNESS.md, "A TPM
// that changes, a process that forks").
__attribute__((constructor)) static void install_fork_handler(void) { (void)pthread_atfork(NULL, NULL, close_in_child); }

static void track(int fd) {
    for (size_t i = 0; i < DIDS_TPM_TRACKED; i++) {
        int free_slot = 0;
        if (atomic_compare_exchange_strong(&tracked[i], &free_slot, fd + 1)) return;
    }
}

static void untrack(int fd) {
    for (size_t i = 0; i < DIDS_TPM_TRACKED; i++) {
        int slot = fd + 1;
        if (atomic_compare_exchange_strong(&tracked[i], &slot, 0)) return;
    }
}

// A slot for `path` (2: being written, 1: in use), or -1 when all are taken.
static int register_path(const char *path) {
    for (int p = 0; p < DIDS_TPM_PATHS; p++) {
        int free_slot = 0;
        if (!atomic_compare_exchange_strong(&path_in_use[p], &free_slot, 2)) continue;
        strncpy(active_paths[p], path, sizeof active_paths[p] - 1);
        active_paths[p][sizeof active_paths[p] - 1] = '\0';
        atomic_store(&path_in_use[p], 1);
        return p;
    }
    return -1;
}

static void unregister_path(int slot) {
    if (slot >= 0) atomic_store(&path_in_use[slot], 0);
}

// Whether `fd` is a Unix socket connected to the swtpm socket `path` (or, `with_control`, its
// control socket `path.ctrl`).
static int is_swtpm_socket(int fd, const char *path, int with_control) {
    struct stat status;
    if (fstat(fd, &status) != 0 || !S_ISSOCK(status.st_mode)) return 0;
    struct sockaddr_un peer;
    socklen_t length = sizeof peer;
    memset(&peer, 0, sizeof peer);
    if (getpeername(fd, (struct sockaddr *)&peer, &length) != 0 || peer.sun_family != AF_UNIX) return 0;
    size_t n = strlen(path), room = length > offsetof(struct sockaddr_un, sun_path)
                                   ? length - offsetof(struct sockaddr_un, sun_path) : 0;
    if (room > sizeof peer.sun_path) room = sizeof peer.sun_path;
    size_t peer_length = strnlen(peer.sun_path, room);
    return peer_length >= n && memcmp(peer.sun_path, path, n) == 0
        && (peer_length == n || (with_control && peer_length == n + 5 && memcmp(peer.sun_path + n, ".ctrl", 5) == 0));
}

// Shuts `fd` down if it is a socket to `peer_path` (exactly, no ".ctrl"), checked and shut on a
// duplicate: the number may be closed and reused by another thread between a check and a
// shutdown on it, while a duplicate keeps the checked open file description.
static void shutdown_if_peer(int fd, const char *peer_path, int with_control) {
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) return;
    if (is_swtpm_socket(copy, peer_path, with_control)) (void)shutdown(copy, SHUT_RDWR);
    close(copy);
}

// The device TCTI opens /dev/tpmrm0 without O_CLOEXEC: a program that forks and executes while a
// conversation is open would hand the TPM connection (and its objects in the resource manager)
// to the child. The descriptors that appeared during the TCTI's initialisation and are this
// device are made close-on-exec, and tracked for a fork without exec; another thread's
// descriptor opened meanwhile is left alone. (The swtpm TCTI's sockets: by their peer, above.)
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
        if (kept < sizeof tpm->descriptors / sizeof tpm->descriptors[0]) {
            tpm->descriptors[kept++] = fd;
            track(fd);
        }
    }
    free(after);
}

// The swtpm TCTI's sockets are opened without SOCK_CLOEXEC, and posix_spawn runs no fork handler:
// a program spawned during a conversation would hold it open. Made close-on-exec.
// Only those that appeared during the TCTI's initialisation: the program's own stay as they are.
static void close_on_exec_swtpm_sockets(const char *path, const int *before, size_t before_count) {
    size_t count;
    int *fds = before ? open_descriptors(&count) : NULL;
    for (size_t i = 0; fds && i < count; i++)
        if (!listed(before, before_count, fds[i]) && is_swtpm_socket(fds[i], path, 1))
            (void)fcntl(fds[i], F_SETFD, fcntl(fds[i], F_GETFD) | FD_CLOEXEC);
    free(fds);
}

int dids_tpm_needs_interrupt(const dids_tpm *tpm) { return tpm->swtpm_socket[0] != '\0'; }

void dids_tpm_interrupt(dids_tpm *tpm) {
    if (!dids_tpm_needs_interrupt(tpm)) return;
    size_t count;
    int *fds = open_descriptors(&count);
    for (size_t i = 0; fds && i < count; i++) shutdown_if_peer(fds[i], tpm->swtpm_socket, 0);
    free(fds);
}

void dids_tpm_flush(dids_tpm *tpm, ESYS_TR *handle) {
    if (*handle == DIDS_ESYS_TR_NONE) return;
    struct dids_tpm_failure ignored;
    if (!tpm->stuck)
        (void)DIDS_TPM_RUN(tpm, &ignored, DIDS_TPM_STAGE_NONE, dids_p_Esys_FlushContext_Async(tpm->esys, *handle),
                           dids_p_Esys_FlushContext_Finish(tpm->esys));
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

// The TCTI module of `driver`, opened once per driver and kept (as the loader keeps libraries).
static TSS2_TCTI_INFO_FUNC tcti_info(const char *driver) {
    static void *device, *swtpm;
    void **handle = strcmp(driver, "device") == 0 ? &device : strcmp(driver, "swtpm") == 0 ? &swtpm : NULL;
    if (!handle) { errno = EINVAL; return NULL; }
    if (!__atomic_load_n(handle, __ATOMIC_ACQUIRE)) {
        char soname[64];
        snprintf(soname, sizeof soname, "libtss2-tcti-%s.so.0", driver);
        void *opened = dids_library_dlopen(soname);
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

// The swtpm TCTI's initialisation sets the locality over swtpm's control socket and reads the
// answer with a blocking read(): a stopped swtpm would hold the caller there past any deadline.
// So a swtpm reached by a Unix socket is asked first, on its control socket (<path>.ctrl, where the
// TCTI finds it), for its capabilities, within the deadline. 0: it answered (or is not there,
// which the TCTI then reports); -1: it did not answer in time.
static int swtpm_answers(const char *config, uint64_t deadline_ms) {
    const char *path = strncmp(config, "path=", 5) == 0 ? config + 5 : NULL;
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (!path || strchr(path, ',') || strlen(path) + 5 >= sizeof address.sun_path) return 0;
    snprintf(address.sun_path, sizeof address.sun_path, "%s.ctrl", path);
    // Non-blocking: a stopped swtpm whose listen queue is full would hold a blocking connect().
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return 0;
    int answered = 0;
    const unsigned char get_capability[4] = {0, 0, 0, 1};  // swtpm's CMD_GET_CAPABILITY
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        answered = errno != EAGAIN;  // EAGAIN: the queue is full, as behind a stopped swtpm
    } else if (send(fd, get_capability, sizeof get_capability, MSG_NOSIGNAL) != (ssize_t)sizeof get_capability) {
        answered = 1;  // nothing to wait for: the TCTI says what is wrong
    } else {
        struct pollfd ready = {.fd = fd, .events = POLLIN};
        for (;;) {
            uint64_t now = now_ms();
            if (now >= deadline_ms) break;
            uint64_t left = deadline_ms - now;
            int n = poll(&ready, 1, left > INT32_MAX ? INT32_MAX : (int)left);
            if (n > 0) { answered = 1; break; }
            if (n < 0 && errno != EINTR) { answered = 1; break; }
        }
        if (answered) {
            unsigned char reply[8];
            (void)recv(fd, reply, sizeof reply, MSG_DONTWAIT);
        }
    }
    close(fd);
    return answered ? 0 : -1;
}

static dids_tpm *open_registered(const char *driver, const char *config, uint64_t deadline_ms,
                                  struct dids_tpm_failure *failure, int *path_slot);

// The swtpm TCTI's initialisation under the call's deadline: it connects to the command socket
// and sets the locality over the control socket, reading the answer with a blocking read() of
// no timeout of its own — a swtpm that went silent there held the caller forever (issue 34,
// case 1). A guard thread shuts every socket to this swtpm down at the deadline, and again every
// 100 ms until the initialisation returns (as dids_tpm_interrupt does for commands: by peer).
struct init_guard {
    pthread_mutex_t lock;
    pthread_cond_t ended;
    int done, fired;
    uint64_t deadline_ms;
    char control_path[108 + 5];
};

static void *guard_initialisation(void *argument) {
    struct init_guard *guard = argument;
    pthread_mutex_lock(&guard->lock);
    uint64_t at = guard->deadline_ms;
    while (!guard->done) {
        struct timespec until = {(time_t)(at / 1000u), (long)(at % 1000u) * 1000000L};
        if (pthread_cond_timedwait(&guard->ended, &guard->lock, &until) == ETIMEDOUT && !guard->done) {
            guard->fired = 1;
            size_t count;
            int *fds = open_descriptors(&count);
            // The control socket only: the TCTI's initialisation connects to the command socket
            // and closes it at once; what blocks is the read of CMD_SET_LOCALITY's answer. Other
            // conversations' command sockets to this swtpm are left alone.
            for (size_t i = 0; fds && i < count; i++) shutdown_if_peer(fds[i], guard->control_path, 0);
            free(fds);
            at = now_ms() + 100u;
        }
    }
    pthread_mutex_unlock(&guard->lock);
    return NULL;
}

// module->init(tcti, size, config), guarded for a swtpm; 1 in *timed_out when the guard fired.
static TSS2_RC guarded_init(TSS2_TCTI_INIT_FUNC init, TSS2_TCTI_CONTEXT *tcti, size_t *size, const char *config,
                            const char *swtpm_path, uint64_t deadline_ms, int *timed_out) {
    *timed_out = 0;
    if (!swtpm_path[0]) return init(tcti, size, config);
    struct init_guard guard = {.deadline_ms = deadline_ms};
    snprintf(guard.control_path, sizeof guard.control_path, "%s.ctrl", swtpm_path);
    pthread_condattr_t attributes;
    pthread_t thread;
    int started = 0;
    if (pthread_mutex_init(&guard.lock, NULL) == 0) {
        if (pthread_condattr_init(&attributes) == 0) {
            if (pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC) == 0
                && pthread_cond_init(&guard.ended, &attributes) == 0) {
                started = pthread_create(&thread, NULL, guard_initialisation, &guard) == 0;
                if (!started) pthread_cond_destroy(&guard.ended);
            }
            pthread_condattr_destroy(&attributes);
        }
        if (!started) pthread_mutex_destroy(&guard.lock);
    }
    // Without a thread (none can be started) the initialisation runs as before, unguarded.
    TSS2_RC rc = init(tcti, size, config);
    if (!started) return rc;
    pthread_mutex_lock(&guard.lock);
    guard.done = 1;
    pthread_cond_signal(&guard.ended);
    pthread_mutex_unlock(&guard.lock);
    pthread_join(thread, NULL);
    *timed_out = guard.fired;
    pthread_cond_destroy(&guard.ended);
    pthread_mutex_destroy(&guard.lock);
    return rc;
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


// A swtpm socket is registered for the fork handler before anything connects to it: the probe of
// its control socket, the TCTI's own control command and its command socket.
dids_tpm *dids_tpm_open(const char *driver, const char *config, uint64_t deadline_ms, struct dids_tpm_failure *failure) {
    int path_slot = strcmp(driver, "swtpm") == 0 && strncmp(config, "path=", 5) == 0 && strlen(config + 5) < 108
                  ? register_path(config + 5) : -1;
    dids_tpm *tpm = open_registered(driver, config, deadline_ms, failure, &path_slot);
    unregister_path(path_slot);  // -1 once a conversation took it
    return tpm;
}

// dids_tpm_open with the slot taken: set to -1 once the conversation owns it.
static dids_tpm *open_registered(const char *driver, const char *config, uint64_t deadline_ms,
                                  struct dids_tpm_failure *failure, int *path_slot) {
    dids_tpm_fail(failure, DIDS_TPM_STAGE_NONE, 0, 0);
    if (strcmp(driver, "device") == 0 && check_device(config, failure) != 0) return NULL;
    if (strcmp(driver, "swtpm") == 0 && swtpm_answers(config, deadline_ms) != 0) {
        dids_tpm_fail(failure, DIDS_TPM_STAGE_TIMED_OUT, 0, 0);
        return NULL;
    }
    TSS2_TCTI_INFO_FUNC info = tcti_info(driver);
    if (!info) { dids_tpm_fail(failure, DIDS_TPM_STAGE_TCTI_LOAD, 0, errno); return NULL; }
    const TSS2_TCTI_INFO *module = info();
    size_t size = 0;
    TSS2_RC rc;
    if (!module || !module->init || (rc = module->init(NULL, &size, config)) != 0) {
        dids_tpm_fail(failure, DIDS_TPM_STAGE_TCTI_INIT, module && module->init ? rc : 0, 0);
        return NULL;
    }
    dids_tpm *tpm = calloc(1, sizeof *tpm);
    TSS2_TCTI_CONTEXT *tcti = calloc(1, size);
    if (!tpm || !tcti) {
        free(tpm);
        free(tcti);
        dids_tpm_fail(failure, DIDS_TPM_STAGE_TCTI_INIT, 0, ENOMEM);
        return NULL;
    }
    for (size_t i = 0; i < sizeof tpm->descriptors / sizeof tpm->descriptors[0]; i++) tpm->descriptors[i] = -1;
    tpm->path_slot = -1;
    if (strcmp(driver, "swtpm") == 0 && strncmp(config, "path=", 5) == 0 && strlen(config + 5) < sizeof tpm->swtpm_socket)
        strcpy(tpm->swtpm_socket, config + 5);
    size_t before_count = 0;
    // Another thread's initialisation (a swtpm busy with someone else's connection) is waited
    // for only until this call's deadline.
    uint64_t now = now_ms(), left = deadline_ms > now ? deadline_ms - now : 0;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)(left / 1000u);
    until.tv_nsec += (long)(left % 1000u) * 1000000L;
    if (until.tv_nsec >= 1000000000L) { until.tv_sec += 1; until.tv_nsec -= 1000000000L; }
    if (pthread_mutex_timedlock(&initialising, &until) != 0) {
        dids_tpm_fail(failure, DIDS_TPM_STAGE_TIMED_OUT, 0, 0);
        free(tcti);
        free(tpm);
        return NULL;
    }
    int *before = open_descriptors(&before_count);
    errno = 0;
    int timed_out = 0;
    if ((rc = guarded_init(module->init, tcti, &size, config, tpm->swtpm_socket, deadline_ms, &timed_out)) != 0
        || timed_out) {
        if (timed_out) {
            dids_tpm_fail(failure, DIDS_TPM_STAGE_TIMED_OUT, 0, 0);
            if (rc == 0) {  // initialised after all, past the deadline: closed again
                finalize_tcti(tcti);
                tcti = NULL;
            }
        } else {
            dids_tpm_fail(failure, DIDS_TPM_STAGE_TCTI_INIT, rc, errno);
        }
        pthread_mutex_unlock(&initialising);
        free(before);
        free(tcti);
        free(tpm);
        return NULL;
    }
    tpm->tcti = tcti;
    // From here the conversation owns the slot: its finalisation releases it, perhaps later on a
    // thread of its own, once its sockets are closed.
    tpm->path_slot = *path_slot;
    *path_slot = -1;
    if (strcmp(driver, "device") == 0) adopt_device(tpm, config, before, before_count);
    if (tpm->swtpm_socket[0]) close_on_exec_swtpm_sockets(tpm->swtpm_socket, before, before_count);
    pthread_mutex_unlock(&initialising);
    free(before);
    tpm->deadline_ms = deadline_ms;
    if ((rc = dids_p_Esys_Initialize(&tpm->esys, tcti, NULL)) != 0) {
        dids_tpm_fail(failure, DIDS_TPM_STAGE_ESYS, rc, 0);
        dids_tpm_close(tpm);
        return NULL;
    }
    return tpm;
}

// A bare swtpm may not have been started; the kernel's resource manager has started its TPM.
// A command like any other: the caller runs it under its watchdog (TPMConversation.run).
int dids_tpm_startup(dids_tpm *tpm, struct dids_tpm_failure *failure) {
    if (!tpm->swtpm_socket[0]) return 0;
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
        if (tpm->descriptors[i] >= 0) untrack(tpm->descriptors[i]);
    if (tpm->esys) dids_p_Esys_Finalize(&tpm->esys);
    finalize_tcti(tpm->tcti);
    unregister_path(tpm->path_slot);
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
