#ifndef DIDS_TCTI_H
#define DIDS_TCTI_H
// The TPM room's transports: DeviceID's two TCTIs, the kernel resource manager's (tcti_device.c)
// and swtpm's (tcti_swtpm.c), and what they share: tss2_tcti.h's common context (version 1) and
// return codes, the TPM's message header, and waiting on a descriptor by a deadline without holding
// up fork(). A transport moves bytes and says what happened (errno, a TSS2_RC); it knows nothing
// of the conversation above it (session/), which decides what a failure means.
#include "../tss2/tss2.h"
#include "CDeviceIDSystem.h"

#include <stddef.h>
#include <stdint.h>

#define DIDS_TCTI_RC(base) ((TSS2_RC)(10u << 16) | (base))  // TSS2_TCTI_RC_LAYER
#define DIDS_TCTI_RC_NOT_IMPLEMENTED DIDS_TCTI_RC(2)
#define DIDS_TCTI_RC_BAD_CONTEXT DIDS_TCTI_RC(3)
#define DIDS_TCTI_RC_BAD_REFERENCE DIDS_TCTI_RC(5)
#define DIDS_TCTI_RC_INSUFFICIENT_BUFFER DIDS_TCTI_RC(6)
#define DIDS_TCTI_RC_BAD_SEQUENCE DIDS_TCTI_RC(7)
// A receive not complete by ESAPI's timeout: only while the deadline is ahead. ESAPI's blocking
// forms call again on TRY_AGAIN, and after the deadline would do so at once, for good; past it a
// TCTI answers IO_ERROR, which the session words as TIMED_OUT.
#define DIDS_TCTI_RC_TRY_AGAIN DIDS_TCTI_RC(9)
#define DIDS_TCTI_RC_IO_ERROR DIDS_TCTI_RC(10)
#define DIDS_TCTI_RC_BAD_VALUE DIDS_TCTI_RC(11)
#define DIDS_TCTI_RC_MALFORMED_RESPONSE DIDS_TCTI_RC(17)

#define DIDS_TCTI_HEADER 10     // a command's or response's tag (2), size (4), code (4)
#define DIDS_TCTI_LARGEST 4096  // a TPM 2.0 command or response (MAX_COMMAND_SIZE)

// TSS2_TCTI_CONTEXT_COMMON_V1, which each TCTI's context begins with (its offsets are checked
// against tss2_tcti.h in Tests/c/check_tpm_layout.c).
#define DIDS_TCTI_COMMON_V1                                                  \
    uint64_t magic;                                                          \
    uint32_t version;                                                        \
    TSS2_RC (*transmit)(TSS2_TCTI_CONTEXT *, size_t, const uint8_t *);       \
    TSS2_RC (*receive)(TSS2_TCTI_CONTEXT *, size_t *, uint8_t *, int32_t);   \
    void (*finalize)(TSS2_TCTI_CONTEXT *);                                   \
    TSS2_RC (*cancel)(TSS2_TCTI_CONTEXT *);                                  \
    TSS2_RC (*get_poll_handles)(TSS2_TCTI_CONTEXT *, void *, size_t *);      \
    TSS2_RC (*set_locality)(TSS2_TCTI_CONTEXT *, uint8_t);
struct dids_tcti_common { DIDS_TCTI_COMMON_V1 };
_Static_assert(offsetof(struct dids_tcti_common, transmit) == 16, "transmit");
_Static_assert(offsetof(struct dids_tcti_common, finalize) == 16 + 2 * sizeof(void *), "finalize");
_Static_assert(offsetof(struct dids_tcti_common, set_locality) == 16 + 5 * sizeof(void *), "setLocality");

/// The monotonic clock in milliseconds, the clock of every deadline.
uint64_t dids_tcti_now_ms(void);
/// Waits for `events` on `fd` until `until_ms`: 1 ready, 0 the time is up, -1 an error (errno).
/// Waiting is not computing: a fork() meanwhile need not wait (dids_computing_pause, CDeviceIDSystem.h).
int dids_tcti_wait(int fd, short events, uint64_t until_ms);
/// Sleeps until the monotonic millisecond `until_ms`; not computing, like dids_tcti_wait.
void dids_tcti_sleep_until(uint64_t until_ms);
/// The 4-byte big-endian number at `p` (a header's size).
uint32_t dids_tcti_be32(const uint8_t *p);
/// Why transmit refuses `command` (BAD_REFERENCE, BAD_VALUE: not a whole command of the size its
/// header says), or 0.
TSS2_RC dids_tcti_refused_command(const uint8_t *command, size_t size);
/// Hands a complete answer (`answer`, `length` bytes: its header's size) to ESAPI's receive: its
/// size where `response` is NULL (the answer is kept: 1), else copied when it fits, the rest of
/// the `*size` bytes of `response` zeroed (0: delivered), or INSUFFICIENT_BUFFER (1: kept). `*rc`
/// is what receive returns.
int dids_tcti_deliver(const uint8_t *answer, size_t length, size_t *size, uint8_t *response, TSS2_RC *rc);
/// cancel and getPollHandles, which neither TCTI implements.
TSS2_RC dids_tcti_not_implemented(TSS2_TCTI_CONTEXT *context);
TSS2_RC dids_tcti_no_poll_handles(TSS2_TCTI_CONTEXT *context, void *handles, size_t *count);

/// DeviceID's TCTI for the TPM resource manager at `path` (tcti_device.c): refused at once unless
/// the kernel says it is one; every byte by `deadline_ms`. NULL when it cannot be had: `*kind` is
/// what the file is (a dids_tpm_device_kind other than DIDS_TPM_DEVICE_RESOURCE_MANAGER), or stays
/// DIDS_TPM_DEVICE_RESOURCE_MANAGER where the path could not be opened, and errno says why. Freed
/// by dids_tcti_device_free.
TSS2_TCTI_CONTEXT *dids_tcti_device_open(const char *path, uint64_t deadline_ms, int *kind);
void dids_tcti_device_free(TSS2_TCTI_CONTEXT *tcti);
/// DeviceID's TCTI for a swtpm at Unix socket `path` (tcti_swtpm.c), every byte by `deadline_ms`.
/// NULL when it cannot be had, with errno (ETIMEDOUT: the deadline passed; ENAMETOOLONG: no socket
/// address holds the path; ENOMEM) and `*rc`, the TSS2_RC the failure is (0 for ENOMEM). Freed by
/// dids_tcti_swtpm_free.
TSS2_TCTI_CONTEXT *dids_tcti_swtpm_open(const char *path, uint64_t deadline_ms, TSS2_RC *rc);
void dids_tcti_swtpm_free(TSS2_TCTI_CONTEXT *tcti);

#ifdef DIDS_FUZZ_TPM
/// The fuzz build's TPM (tcti_fuzz.c), where the harness that feeds it is linked in (1 from
/// dids_tcti_fuzz_fed; Tests/fuzz/tpm): libFuzzer's bytes answer in place of the swtpm, whose
/// open returns dids_tcti_fuzz_open's context and whose free frees it. Its clock skips sleeps:
/// dids_tcti_fuzz_ahead_ms is what the clock adds to CLOCK_MONOTONIC, and dids_tcti_fuzz_skip
/// moves it on to `until_ms` (1) where the fuzz TPM is fed, and is 0 where it is not.
int dids_tcti_fuzz_fed(void);
TSS2_TCTI_CONTEXT *dids_tcti_fuzz_open(TSS2_RC *rc);
uint64_t dids_tcti_fuzz_ahead_ms(void);
int dids_tcti_fuzz_skip(uint64_t until_ms);
/// Whether DEVICEID_FUZZ_TPM_UNSALTED is set: then the session authorises with passwords where
/// it would with its salted session (session/salted.c), so that an answer the fuzzer changed
/// reaches the code that reads it instead of failing its HMAC, and the recorder
/// (Tests/fuzz/tpm/record --unsalted) records such conversations from a swtpm.
int dids_tcti_fuzz_unsalted(void);
#endif

#endif
