// One conversation with the TPM: ESAPI (tss2/esys.c, loaded by the caller first), over one of
// DeviceID's own TCTIs: the kernel's resource manager (transports/tcti_device.c) or a swtpm
// (transports/tcti_swtpm.c). (tss2's TCTI loader would fall back to /dev/tpm0, which bypasses the
// resource manager.) A transport says what happened (errno, a TSS2_RC); this file says at which
// stage of the conversation it failed.
#include "session.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

int dids_tpm_fail(struct dids_tpm_failure *failure, int stage, uint32_t rc, int error_number) {
    failure->stage = stage;
    failure->rc = rc;
    failure->error_number = error_number;
    return 0;
}

int dids_tpm_arm(dids_tpm *tpm) {
    uint64_t now = dids_tcti_now_ms();
    if (now >= tpm->deadline_ms) { tpm->stuck = 1; return -1; }
    uint64_t left = tpm->deadline_ms - now;
    dids_p_Esys_SetTimeout(tpm->esys, left > INT32_MAX ? INT32_MAX : (int32_t)left);
    return 0;
}

int dids_tpm_fail_command(dids_tpm *tpm, struct dids_tpm_failure *failure, int stage, uint32_t rc) {
    if (dids_tcti_now_ms() >= tpm->deadline_ms) {
        tpm->stuck = 1;
        return dids_tpm_fail(failure, DIDS_TPM_STAGE_TIMED_OUT, rc, 0);
    }
    // An answer that is not the TPM's to the command sent: its HMAC under the salted session fails,
    // or it is cut short (or runs on) where tpm2-tss reads the session's part.
    int changed = rc == DIDS_TSS2_ESYS_RC_RSP_AUTH_FAILED
               || ((rc & 0xff0000u) != 0 && (rc & 0xffffu) == DIDS_TSS2_BASE_RC_MALFORMED_RESPONSE);
    return dids_tpm_fail(failure, stage, rc, changed ? EPROTO : 0);
}

int dids_tpm_resend(dids_tpm *tpm, uint32_t rc, unsigned *pause_ms) {
    uint32_t code = dids_tpm_rc_code(rc);
    if (code != DIDS_TPM2_RC_RETRY && code != DIDS_TPM2_RC_YIELDED && code != DIDS_TPM2_RC_TESTING) return 0;
    uint64_t now = dids_tcti_now_ms();
    if (now + *pause_ms >= tpm->deadline_ms) {
        // No time for another try: waited out, so that the failure is the deadline's (TIMED_OUT).
        if (now < tpm->deadline_ms) dids_tcti_sleep_until(tpm->deadline_ms);
        return 0;
    }
    dids_tcti_sleep_until(now + *pause_ms);
    if (*pause_ms < 64) *pause_ms *= 2;
    return 1;
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
    dids_computing_begin();
    dids_p_Esys_TR_Close(tpm->esys, handle);  // an ESAPI handle only: nothing to flush in the TPM
    dids_computing_end();
    *handle = DIDS_ESYS_TR_NONE;
}

int dids_tpm_put(struct dids_tpm_bytes *out, const void *data, size_t size, int stage, struct dids_tpm_failure *failure) {
    if (!out) return 1;
    out->size = size;
    if (size > out->capacity) return dids_tpm_fail(failure, stage, 0, ENOBUFS);
    if (size) memcpy(out->data, data, size);
    return 1;
}

// The transports' failures as the conversation's stages.
static TSS2_TCTI_CONTEXT *open_swtpm(const char *path, uint64_t deadline_ms, struct dids_tpm_failure *failure) {
    TSS2_RC rc = 0;
    TSS2_TCTI_CONTEXT *tcti = dids_tcti_swtpm_open(path, deadline_ms, &rc);
    if (!tcti) {
        if (errno == ETIMEDOUT) dids_tpm_fail(failure, DIDS_TPM_STAGE_TIMED_OUT, 0, 0);
        else dids_tpm_fail(failure, DIDS_TPM_STAGE_TCTI_INIT, rc, errno);
    }
    return tcti;
}

static TSS2_TCTI_CONTEXT *open_device(const char *path, uint64_t deadline_ms, struct dids_tpm_failure *failure) {
    int kind = DIDS_TPM_DEVICE_RESOURCE_MANAGER;
    TSS2_TCTI_CONTEXT *tcti = dids_tcti_device_open(path, deadline_ms, &kind);
    if (!tcti) {
        if (kind != DIDS_TPM_DEVICE_RESOURCE_MANAGER) dids_tpm_fail(failure, DIDS_TPM_STAGE_DEVICE_KIND, (uint32_t)kind, 0);
        else dids_tpm_fail(failure, DIDS_TPM_STAGE_TCTI_INIT, 0, errno);
    }
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
    tpm->software = software;
    tpm->deadline_ms = deadline_ms;
    tpm->salted = DIDS_ESYS_TR_NONE;
    tpm->tcti = software ? open_swtpm(config + 5, deadline_ms, failure) : open_device(config, deadline_ms, failure);
    if (!tpm->tcti) { free(tpm); return NULL; }
    tpm->ledger = dids_tpm_ledger_open(tpm->tcti);
    if (!tpm->ledger) {
        dids_tpm_fail(failure, DIDS_TPM_STAGE_TCTI_INIT, 0, ENOMEM);
        dids_tpm_close(tpm);
        return NULL;
    }
    dids_computing_begin();
    TSS2_RC rc = dids_p_Esys_Initialize(&tpm->esys, tpm->ledger, NULL);
    dids_computing_end();
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
    if (tpm->esys) {
        dids_computing_begin();
        dids_p_Esys_Finalize(&tpm->esys);
        dids_computing_end();
    }
    if (tpm->ledger) dids_tpm_ledger_free(tpm->ledger);
    if (tpm->software) dids_tcti_swtpm_free(tpm->tcti);
    else dids_tcti_device_free(tpm->tcti);
    free(tpm);
    return NULL;
}

void dids_tpm_close(dids_tpm *tpm) {
    if (!tpm) return;
    // What ESAPI could not flush (an answer it failed to parse, after which it refuses every
    // command), flushed beneath it. Not past the deadline: the transport may hold a command then.
    if (tpm->esys) dids_tpm_flush(tpm, &tpm->salted);
    if (!tpm->stuck && tpm->ledger) dids_tpm_ledger_flush(tpm->ledger, tpm->deadline_ms);
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
