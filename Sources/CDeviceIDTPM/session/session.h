#ifndef DIDS_TPM_SESSION_H
#define DIDS_TPM_SESSION_H
// What the session's files share: the resolved ESAPI functions (tss2/esys.c), one conversation's
// state, and the command runner that keeps every command within the caller's deadline.
#include "../transports/tcti.h"
#include "CDeviceIDSystem.h"

#define DIDS_TPM_EXTERN(ret, name, params, args) extern ret(*dids_p_##name) params;
#define DIDS_TPM_EXTERN_VOID(name, params, args) extern void(*dids_p_##name) params;
DIDS_TPM_FUNCTIONS(DIDS_TPM_EXTERN, DIDS_TPM_EXTERN_VOID)

struct dids_tpm {
    TSS2_TCTI_CONTEXT *tcti;    // the transport
    TSS2_TCTI_CONTEXT *ledger;  // what ESAPI speaks through: the transport, and what the TPM made (ledger.c)
    ESYS_CONTEXT *esys;
    uint64_t deadline_ms;
    int stuck;  // a command was abandoned at the deadline: ESAPI accepts no other until finalised
    int software;            // a swtpm, through transports/tcti_swtpm.c; else a device, through tcti_device.c
    ESYS_TR salted;          // the salted session (salted.c), once a command has needed it; NONE before
    unsigned char pin[68];   // the Name the salting key must have (dids_tpm_pin); pin_size 0: any
    size_t pin_size;
    unsigned char salt_name[68];  // the Name of the key `salted` was salted to
    size_t salt_name_size;
};


/// A TCTI for ESAPI that passes everything to `transport` and keeps the handles of the transient
/// objects and sessions the TPM's answers say it made and has not flushed (ledger.c). NULL when
/// out of memory. Freed by dids_tpm_ledger_free, before the transport.
TSS2_TCTI_CONTEXT *dids_tpm_ledger_open(TSS2_TCTI_CONTEXT *transport);
/// Flushes every handle the ledger still holds with TPM2_FlushContext commands of its own, through
/// the transport, by `deadline_ms` (ESAPI may refuse to: BAD_SEQUENCE after an answer it could not
/// parse). How many the TPM flushed.
int dids_tpm_ledger_flush(TSS2_TCTI_CONTEXT *ledger, uint64_t deadline_ms);
void dids_tpm_ledger_free(TSS2_TCTI_CONTEXT *ledger);

/// Records a failure; returns 0 so that it can end a condition.
int dids_tpm_fail(struct dids_tpm_failure *failure, int stage, uint32_t rc, int error_number);
/// Records a command's failure: TIMED_OUT (and `stuck`) when the deadline has passed (the
/// command was cut short by ESAPI's timeout or the swtpm TCTI's); `stage` otherwise.
int dids_tpm_fail_command(dids_tpm *tpm, struct dids_tpm_failure *failure, int stage, uint32_t rc);
/// Arms ESAPI's timeout with what is left before the deadline; -1 (and `stuck`) when nothing is.
int dids_tpm_arm(dids_tpm *tpm);

/// Whether `rc` is a warning the TPM answers to have a command sent again (RETRY, YIELDED,
/// TESTING) and the deadline leaves time to: then it has waited a little (`*pause_ms`, doubled
/// each time up to 64 ms) and the caller sends it again. 0 otherwise, the deadline perhaps passed.
int dids_tpm_resend(dids_tpm *tpm, uint32_t rc, unsigned *pause_ms);

/// Sends a command (`send`, an Esys_X_Async call) and collects its answer (`collect`, the
/// Esys_X_Finish call) before the deadline. ESAPI answers TRY_AGAIN for a timeout and when it
/// resent a command the TPM asked to have resent (RETRY, YIELDED, TESTING); it resends at once,
/// at most five times, and then returns the warning: the command is sent again here, after a
/// pause, until the deadline (dids_tpm_resend). 1 on success, 0 with `failure` filled otherwise.
#define DIDS_TPM_RUN(tpm, failure, stage, send, collect) \
    ({ \
        int ok_ = 0, again_ = 1; \
        unsigned pause_ = 1; \
        TSS2_RC rc_ = 0; \
        while (again_) { \
            again_ = 0; \
            if ((tpm)->stuck || dids_tpm_arm(tpm) < 0) { \
                dids_tpm_fail((failure), DIDS_TPM_STAGE_TIMED_OUT, 0, 0); \
            } else if ((dids_computing_begin(), rc_ = (send), dids_computing_end(), rc_) != 0) { \
                dids_tpm_fail_command((tpm), (failure), (stage), rc_); \
            } else { \
                for (;;) { \
                    if (dids_tpm_arm(tpm) < 0) { dids_tpm_fail((failure), DIDS_TPM_STAGE_TIMED_OUT, 0, 0); break; } \
                    dids_computing_begin(); \
                    rc_ = (collect); \
                    dids_computing_end(); \
                    if ((rc_ & 0xffffu) == DIDS_TSS2_BASE_RC_TRY_AGAIN) continue; \
                    if (rc_ != 0 && dids_tpm_resend((tpm), rc_, &pause_)) { again_ = 1; break; } \
                    ok_ = rc_ == 0 ? 1 : dids_tpm_fail_command((tpm), (failure), (stage), rc_); \
                    break; \
                } \
            } \
        } \
        ok_; \
    })

/// Flushes a transient object or session (nothing when `*handle` is ESYS_TR_NONE or the
/// conversation is stuck) and forgets it.
void dids_tpm_flush(dids_tpm *tpm, ESYS_TR *handle);
/// Forgets the ESAPI handle of an object the TPM keeps (an NV index, a persistent key): nothing
/// is flushed. NONE afterwards.
void dids_tpm_forget(dids_tpm *tpm, ESYS_TR *handle);

/// Creates one of the owner hierarchy's primaries DeviceID makes (enum dids_tpm_key). `public_area`
/// (may be NULL) receives its marshalled TPMT_PUBLIC. 1 on success.
int dids_tpm_create_primary(dids_tpm *tpm, enum dids_tpm_key key, const unsigned char unique[32], ESYS_TR *handle,
                            struct dids_tpm_bytes *public_area, struct dids_tpm_failure *failure);
/// As dids_tpm_create_primary, with `policy` (NULL: none) the 32-byte authPolicy of the binding
/// key of this-device-only+pcr7, which then has BINDING_KEY_PCR7's attributes (no userWithAuth).
int dids_tpm_create_primary_policy(dids_tpm *tpm, enum dids_tpm_key key, const unsigned char unique[32],
                                   const unsigned char *policy, ESYS_TR *handle, struct dids_tpm_bytes *public_area,
                                   struct dids_tpm_failure *failure);
/// TPM2_CreatePrimary of `template` in `hierarchy` (its auth empty), failing at `stage`; its public
/// area into `*public` for the caller to Esys_Free (`public` may be NULL). A public area that is
/// not the template's (objects.c, as_asked: every field but the key itself) fails at `stage` with
/// EPROTO, the object flushed: whoever answers as the TPM does not choose the key.
int dids_tpm_create_primary_from(dids_tpm *tpm, ESYS_TR hierarchy, const TPM2B_PUBLIC *template, int stage,
                                 ESYS_TR *handle, TPM2B_PUBLIC **public, struct dids_tpm_failure *failure);
/// Whether the TPMT_PUBLIC `got` is a key of the template `asked` (objects.c): every field but
/// the key itself, unique's contents.
int dids_tpm_as_asked(const unsigned char *asked, const unsigned char *got);
/// TPM2_CreatePrimary as create_primary_from, its hierarchy authorised by `session` (the salted
/// session, or DIDS_ESYS_TR_PASSWORD for the key that session is salted to).
int dids_tpm_create_primary_with(dids_tpm *tpm, ESYS_TR hierarchy, ESYS_TR session, const TPM2B_PUBLIC *template,
                                 int stage, ESYS_TR *handle, TPM2B_PUBLIC **public, struct dids_tpm_failure *failure);
/// The conversation's salted HMAC session (salted.c), started at the first call, its attributes
/// set for the next command: continueSession and `attributes` (DIDS_TPMA_SESSION_DECRYPT,
/// _ENCRYPT, where that command's first parameter is a sized buffer). NONE with `failure` set.
ESYS_TR dids_tpm_salted(dids_tpm *tpm, uint8_t attributes, struct dids_tpm_failure *failure);
/// The salted session for a command it authorises nothing in (GetCapability, ReadPublic,
/// NV_ReadPublic, ESAPI's own in TR_FromTPMPublic): audit set, so that the TPM HMACs the answer
/// all the same and ESAPI refuses one changed on its way (TSS2_ESYS_RC_RSP_AUTH_FAILED).
ESYS_TR dids_tpm_audited(dids_tpm *tpm, struct dids_tpm_failure *failure);
/// After a command authorised by the salted session failed: a TPM that refused the authorisation
/// (BAD_AUTH, AUTH_FAIL) of an entity with no password (one of DeviceID's objects, `hierarchy`
/// NONE; or a hierarchy TPM_PT_PERMANENT says has none) checked another command than was sent:
/// EPROTO. Returns 0, so that it can end a condition.
int dids_tpm_refused_salted(dids_tpm *tpm, ESYS_TR hierarchy, struct dids_tpm_failure *failure);
/// The Name ESAPI holds for `key` (for the caller to Esys_Free): the TPM's, which ESAPI checked
/// against the public area it came with, and create_primary_from that public area against the
/// template. The one Name every ID and every piece of evidence is computed from (commands.c).
int dids_tpm_name(dids_tpm *tpm, ESYS_TR key, TPM2B_NAME **name, struct dids_tpm_failure *failure);
/// Whether `attest` (`size` bytes, a TPMS_ATTEST as the TPM marshals it) is TPM2_Certify's, made
/// by the TPM (TPM_GENERATED), over `nonce`, of the object whose Name is `name`, and nothing more.
int dids_tpm_attests_certify(const unsigned char *attest, size_t size, const TPM2B_DATA *nonce, const TPM2B_NAME *name);
/// Which of the `count` (at most 256) handles from `first` (NV indices or persistent objects) the
/// TPM holds, as a bit set: bit k % 32 of `set[k / 32]` for handle `first` + k (nv.c). 1, or
/// 0 with `failure` set (at `stage`).
int dids_tpm_handles_present(dids_tpm *tpm, uint32_t first, uint32_t count, int stage, uint32_t *set,
                        struct dids_tpm_failure *failure);
/// NV index `handle`'s whole contents into `out` (ENOBUFS when they do not fit).
int dids_tpm_nv_read(dids_tpm *tpm, uint32_t handle, int stage, struct dids_tpm_bytes *out,
                     struct dids_tpm_failure *failure);
/// The TPMT_PUBLIC NV index `index` holds, unmarshalled by tpm2-tss into `template`: a whole one,
/// EBADMSG at `stage` otherwise (also when it is larger than any TPMT_PUBLIC).
int dids_tpm_nv_template(dids_tpm *tpm, uint32_t index, int stage, TPM2B_PUBLIC *template,
                         struct dids_tpm_failure *failure);
/// The marshalled form of an ECDSA or RSASSA TPMT_SIGNATURE ESAPI returned (commands.c);
/// another algorithm is a SHAPE failure.
int dids_tpm_marshal_signature(const TPMT_SIGNATURE *s, struct dids_tpm_bytes *out, struct dids_tpm_failure *failure);
/// Copies `size` bytes into `out`, or fails with ENOBUFS (setting out->size to what is needed).
int dids_tpm_put(struct dids_tpm_bytes *out, const void *data, size_t size, int stage, struct dids_tpm_failure *failure);

#endif
