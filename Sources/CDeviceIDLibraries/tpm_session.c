// One conversation with the TPM: ESAPI comes through the loader (DIDS_LIBRARY_TPM); the TCTI
// module the caller's TCTI string names is loaded here, directly, as systemd does: tss2's TCTI
// loader would fall back to /dev/tpm0, which bypasses the kernel's resource manager.
#include "tpm_internal.h"
#include "loader.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define POINTER(ret, name, params, args) ret(*dids_p_##name) params;
#define POINTER_VOID(name, params, args) void(*dids_p_##name) params;
DIDS_TPM_FUNCTIONS(POINTER, POINTER_VOID)

#define NAME(ret, name, params, args) #name,
#define NAME_VOID(name, params, args) #name,
static const char *const names[] = {DIDS_TPM_FUNCTIONS(NAME, NAME_VOID)};
#define SLOT(ret, name, params, args) DIDS_SLOT(dids_p_##name),
#define SLOT_VOID(name, params, args) DIDS_SLOT(dids_p_##name),
static void **const slots[] = {DIDS_TPM_FUNCTIONS(SLOT, SLOT_VOID)};

struct dids_loadable dids_tpm_loadable = {
    .soname = "libtss2-esys.so.0",
    .package = "libtss2-esys-3.0.2-0, libtss2-esys-3.0.2-0t64 on Debian 13",
    .oldest = "tpm2-tss 3.2.1",
    .names = names,
    .slots = slots,
    .count = sizeof names / sizeof names[0],
    .status = DIDS_LIBRARY_FAILED,
};

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
        void *opened = dlopen(soname, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (!opened) { errno = ENOENT; return NULL; }
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

// tss2 logs its errors to stderr unless TSS2_LOG says otherwise; a library must not write into
// its caller's stderr. As systemd does, "all+none" is set once, unless the caller chose a level.
static void quiet_tss2(void) {
    static int done;
    if (__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL)) return;
    (void)setenv("TSS2_LOG", "all+none", 0);
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
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    int answered = 0;
    const unsigned char get_capability[4] = {0, 0, 0, 1};  // swtpm's CMD_GET_CAPABILITY
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0
        || send(fd, get_capability, sizeof get_capability, MSG_NOSIGNAL) != (ssize_t)sizeof get_capability) {
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

dids_tpm *dids_tpm_open(const char *driver, const char *config, uint64_t deadline_ms, struct dids_tpm_failure *failure) {
    dids_tpm_fail(failure, DIDS_TPM_STAGE_NONE, 0, 0);
    quiet_tss2();
    if (strcmp(driver, "device") == 0) {
        // The device TCTI's own open() loses errno in its logging; asking first tells "no TPM"
        // (ENOENT) from "not allowed" (EACCES) exactly.
        int fd = open(config, O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) { dids_tpm_fail(failure, DIDS_TPM_STAGE_TCTI_INIT, 0, errno); return NULL; }
        close(fd);
    }
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
    errno = 0;
    if ((rc = module->init(tcti, &size, config)) != 0) {
        dids_tpm_fail(failure, DIDS_TPM_STAGE_TCTI_INIT, rc, errno);
        free(tcti);
        free(tpm);
        return NULL;
    }
    tpm->tcti = tcti;
    tpm->deadline_ms = deadline_ms;
    if ((rc = dids_p_Esys_Initialize(&tpm->esys, tcti, NULL)) != 0) {
        dids_tpm_fail(failure, DIDS_TPM_STAGE_ESYS, rc, 0);
        dids_tpm_close(tpm);
        return NULL;
    }
    // A bare swtpm may not have been started; the kernel's resource manager has started its TPM.
    if (strcmp(driver, "swtpm") == 0) {
        struct dids_tpm_failure startup;
        if (!DIDS_TPM_RUN(tpm, &startup, DIDS_TPM_STAGE_STARTUP, dids_p_Esys_Startup_Async(tpm->esys, DIDS_TPM2_SU_CLEAR),
                          dids_p_Esys_Startup_Finish(tpm->esys))
            && !(startup.stage == DIDS_TPM_STAGE_STARTUP && (startup.rc & 0xfffu) == DIDS_TPM2_RC_INITIALIZE)) {
            *failure = startup;
            dids_tpm_close(tpm);
            return NULL;
        }
    }
    return tpm;
}

void dids_tpm_close(dids_tpm *tpm) {
    if (!tpm) return;
    if (tpm->esys) dids_p_Esys_Finalize(&tpm->esys);
    finalize_tcti(tpm->tcti);
    free(tpm);
}
