#ifndef DIDS_TPM_H
#define DIDS_TPM_H
// The TPM room's public face: one conversation with the TPM 2.0 through tpm2-tss's ESAPI
// (libtss2-esys.so.0), loaded on first use as systemd loads it (tss2/esys.c), over DeviceID's own
// TCTIs (transports/: the kernel's resource manager, a swtpm's sockets): docs/HARDWARE-ID.md.
// Nothing of tpm2-tss's own types crosses this header; they are the room's own (tss2/tss2.h).
#include "CDeviceIDLibraries.h"
#include "dids_tpm_facts.h"  // the TPM's facts: labels, attributes, algorithms, handles, codes

#include <stddef.h>
#include <stdint.h>

/// libtss2-esys.so.0, for dids_loadable_load: loaded before any conversation (tss2/esys.c).
dids_loadable *dids_tpm_library(void);

/// The TPM's code in a TSS2_RC from the TPM (layer 0): format one (bit 7) carries a parameter,
/// handle or session number in its upper bits, which this drops; format zero is the code itself.
/// A code of another layer (the TCTI's, ESAPI's) is returned whole.
static inline uint32_t dids_tpm_rc_code(uint32_t rc) {
    return (rc & 0xff0000u) ? rc : (rc & 0x80u) ? (rc & 0xbfu) : (rc & 0xfffu);
}

/// Where a TPM conversation failed, for the status and its words.
enum dids_tpm_stage {
    DIDS_TPM_STAGE_NONE = 0,
    DIDS_TPM_STAGE_TCTI_LOAD,    // no TCTI for the driver asked for
    DIDS_TPM_STAGE_TCTI_INIT,    // the TCTI could not open the TPM (no device, permission: error_number)
    DIDS_TPM_STAGE_ESYS,         // Esys_Initialize
    DIDS_TPM_STAGE_STARTUP,
    DIDS_TPM_STAGE_CREATE,       // CreatePrimary (the app key, the attestation key or the EK)
    DIDS_TPM_STAGE_NAME,
    DIDS_TPM_STAGE_EK_CERTIFICATE,  // finding or reading the EK certificates' NV indices, or an EK's nonce
    DIDS_TPM_STAGE_SESSION,      // the EK's policy session
    DIDS_TPM_STAGE_ACTIVATE,     // ActivateCredential
    DIDS_TPM_STAGE_CERTIFY,
    DIDS_TPM_STAGE_COUNTER,      // finding, defining, incrementing or reading an app's NV counter
                                 // (rc 0 and ENOSPC: every slot it may use holds another's index;
                                 // EBUSY: other processes took every count it tried for)
    DIDS_TPM_STAGE_SIGN,
    DIDS_TPM_STAGE_TIMED_OUT,    // the deadline passed while the TPM had not answered
    DIDS_TPM_STAGE_SHAPE,        // the TPM answered with a structure DeviceID does not accept
    DIDS_TPM_STAGE_DEVICE_KIND,  // a device: path that is no TPM resource manager (rc: a dids_tpm_device_kind)
    DIDS_TPM_STAGE_PROPERTIES,   // TPM2_GetCapability of the TPM's fixed properties
    DIDS_TPM_STAGE_PLATFORM_AK,  // finding or reading a platform AK and its certificate, or its Certify
    DIDS_TPM_STAGE_EK_TEMPLATE,  // an EK template in NV: EBADMSG, no TPMT_PUBLIC; EPROTONOSUPPORT, not of its kind
    DIDS_TPM_STAGE_BINDING,      // ECDH_KeyGen or ECDH_ZGen with the this-device-only binding key
    DIDS_TPM_STAGE_PIN,          // the salting key is not the one pinned (dids_tpm_pin): EPROTO
};

/// What a `device:` path is, as the kernel says (fstat, then /sys/dev/char/MAJ:MIN/subsystem).
enum dids_tpm_device_kind {
    DIDS_TPM_DEVICE_RESOURCE_MANAGER = 0,  // class tpmrm: the one DeviceID uses
    DIDS_TPM_DEVICE_RAW,                   // class tpm (/dev/tpm0 by any name): never opened
    DIDS_TPM_DEVICE_OTHER,                 // a character device of another class (/dev/null is "mem")
    DIDS_TPM_DEVICE_NOT_CHARACTER,         // a file, directory, socket…
    DIDS_TPM_DEVICE_UNKNOWN,               // a character device sysfs does not list
};
/// The sysfs class of the character device at `path` ("tpmrm", "tpm", "mem"…) into `out`; 0, or -1
/// when it has none. For words only: dids_tpm_open decides on the descriptor it opened.
int dids_tpm_device_class(const char *path, char *out, size_t size);

/// How a TPM conversation failed: the stage, the TSS2_RC and errno where the TCTI's open()
/// failed (EACCES, ENOENT, ...), or ENOBUFS/ENOMEM for the caller's buffers and memory, or EPROTO
/// where the TPM's answer is not an answer to what was asked (a key of another template, another
/// NV index, a capability or certification not asked for).
struct dids_tpm_failure {
    int stage;
    uint32_t rc;
    int error_number;
};

/// A byte buffer the caller owns: `size` is set to what was written (or needed).
struct dids_tpm_bytes {
    unsigned char *data;
    size_t capacity;
    size_t size;
};

/// One conversation with the TPM behind TCTI `driver` ("device" or "swtpm") with `config`
/// ("/dev/tpmrm0", "path=/run/t/tpm.sock"), ending at CLOCK_MONOTONIC millisecond `deadline_ms`.
/// Every function below flushes every transient object it made, on every path.
typedef struct dids_tpm dids_tpm;
dids_tpm *dids_tpm_open(const char *driver, const char *config, uint64_t deadline_ms, struct dids_tpm_failure *failure);
void dids_tpm_close(dids_tpm *tpm);
/// TPM2_Startup on a swtpm (a bare one may not have been started; TPM_RC_INITIALIZE is success);
/// nothing on a device. Under the conversation's deadline, like any command. 0, or -1.
int dids_tpm_startup(dids_tpm *tpm, struct dids_tpm_failure *failure);
/// The Name (`size` bytes, at most 68; 0: none, as at first use) the key the conversation's
/// session is salted to must have (docs/STATE.md, "TPM pins"): a persistent SRK of another Name
/// is passed over for the primary, and a primary of another Name fails at DIDS_TPM_STAGE_PIN with
/// EPROTO, before StartAuthSession.
void dids_tpm_pin(dids_tpm *tpm, const unsigned char *name, size_t size);
/// The Name of the key the session was salted to, into `out`: its size, 0 when none was started.
size_t dids_tpm_salt_name(const dids_tpm *tpm, unsigned char out[68]);

/// The owner hierarchy's primaries DeviceID makes (docs/HARDWARE-ID.md). The app key's and the AK's
/// templates are frozen: a change in any field changes every hardware ID. The credential key
/// (WebAuthn's attested credential) is the app key's template with scheme TPM_ALG_NULL, as
/// WebAuthn's "tpm" format requires of a certified key, and its own unique.
/// The binding key (this-device-only records: binding.c) is an ECC P-256 decryption key of its own
/// template and a unique from its label alone: one per TPM, the same until the owner hierarchy is
/// cleared.
enum dids_tpm_key { DIDS_TPM_APP_KEY, DIDS_TPM_ATTESTATION_KEY, DIDS_TPM_CREDENTIAL_KEY, DIDS_TPM_BINDING_KEY };

/// The Name (34 bytes: 0x000b ‖ SHA-256 of the public area) of the `key` (the app key or the
/// credential key) made from `unique`, and its public area, marshalled as the TPM marshals a
/// TPMT_PUBLIC (may be NULL).
int dids_tpm_key_name(dids_tpm *tpm, enum dids_tpm_key key, const unsigned char unique[32],
                      struct dids_tpm_bytes *name, struct dids_tpm_bytes *public_area,
                      struct dids_tpm_failure *failure);
/// The values of the `count` (at most 16) fixed properties from `first` (TPM_PT_*), 0 for one the
/// TPM does not report. 1, or 0 with `failure` set.
int dids_tpm_properties(dids_tpm *tpm, uint32_t first, uint32_t count, uint32_t *values,
                        struct dids_tpm_failure *failure);

/// The endorsement keys of the TCG EK Credential Profile (2.5, Annex B) DeviceID uses, by the
/// profile's template names; the order is the device's preference when it holds several
/// certificates (docs/HARDWARE-ID.md, "Endorsement keys"). H-5 (SM2) is not among them.
enum dids_tpm_ek {
    DIDS_TPM_EK_L1, DIDS_TPM_EK_L2, DIDS_TPM_EK_H1, DIDS_TPM_EK_H2, DIDS_TPM_EK_H3, DIDS_TPM_EK_H4, DIDS_TPM_EK_H6,
    DIDS_TPM_EK_H7, DIDS_TPM_EK_KINDS
};
/// The NV index of kind `ek`'s certificate; of its nonce and template (0 in the high range, which
/// has none).
uint32_t dids_tpm_ek_certificate_index(enum dids_tpm_ek ek);
uint32_t dids_tpm_ek_nonce_index(enum dids_tpm_ek ek);
uint32_t dids_tpm_ek_template_index(enum dids_tpm_ek ek);
/// Whether the TPM makes kind `ek`'s EK from a template DeviceID can use (`*fits` 1): the
/// profile's, or one in the kind's template index that differs from it only in its attributes,
/// RSA exponent or unique. `*fits` 0 for a template that is no TPMT_PUBLIC or another kind of key.
/// 1, or 0 with `failure` set when the TPM failed.
int dids_tpm_ek_template_fits(dids_tpm *tpm, enum dids_tpm_ek ek, int *fits, struct dids_tpm_failure *failure);
/// Which of the 32 NV indices from DIDS_TPM_EK_NV_FIRST the TPM defines, as a bit set (bit k:
/// index DIDS_TPM_EK_NV_FIRST + k), in `present`. 1, or 0 with `failure` set.
int dids_tpm_ek_indices(dids_tpm *tpm, uint32_t *present, struct dids_tpm_failure *failure);
/// Which of the 256 EK chain indices from DIDS_TPM_EK_CHAIN_FIRST the TPM defines: bit k % 32
/// of `present[k / 32]` for index DIDS_TPM_EK_CHAIN_FIRST + k. 1, or 0 with `failure` set.
int dids_tpm_ek_chain_indices(dids_tpm *tpm, uint32_t present[8], struct dids_tpm_failure *failure);
/// EK chain index DIDS_TPM_EK_CHAIN_FIRST + `k` (k < 256) as it holds it: one or more DER
/// certificates, perhaps padded.
int dids_tpm_ek_chain_part(dids_tpm *tpm, uint32_t k, struct dids_tpm_bytes *part, struct dids_tpm_failure *failure);
/// The EK certificate of kind `ek` as its NV index holds it (the caller trims it to its DER).
int dids_tpm_ek_certificate(dids_tpm *tpm, enum dids_tpm_ek ek, struct dids_tpm_bytes *certificate,
                            struct dids_tpm_failure *failure);
/// The marshalled TPMT_PUBLIC of the EK of kind `ek` (the one activation uses: persistent, or
/// made from the template and flushed again), for a TPM without that EK's certificate in NV.
int dids_tpm_ek_public(dids_tpm *tpm, enum dids_tpm_ek ek, struct dids_tpm_bytes *public_area,
                       struct dids_tpm_failure *failure);
/// The attestation key's marshalled TPMT_PUBLIC (the AK is the owner hierarchy's primary of
/// template `ak_unique`, one per app).
int dids_tpm_ak_public(dids_tpm *tpm, const unsigned char ak_unique[32], struct dids_tpm_bytes *ak_public,
                       struct dids_tpm_failure *failure);
/// TPM2_ActivateCredential with the EK of kind `ek`: a persistent EK whose public area is that
/// kind's template (DIDS_TPM_EK_PERSISTENT_FIRST), else one made from the template (its nonce
/// honoured where its NV index holds one). The secret a verifier's MakeCredential sealed to that EK for the AK.
int dids_tpm_activate(dids_tpm *tpm, enum dids_tpm_ek ek, const unsigned char ak_unique[32],
                      const unsigned char *credential_blob, size_t credential_blob_size,
                      const unsigned char *encrypted_secret, size_t encrypted_secret_size,
                      struct dids_tpm_bytes *credential, struct dids_tpm_failure *failure);
/// TPM2_Certify of the `kind` key (the app key or the credential key) of `unique` by the AK
/// over `nonce`: the TPMS_ATTEST as signed, the marshalled TPMT_SIGNATURE, both keys'
/// marshalled TPMT_PUBLIC, and the certified key's Name as the TPM gave it (`app_name`, may be
/// NULL), which the TPMS_ATTEST certifies. A TPMS_ATTEST that is not Certify's of that Name over
/// `nonce` fails at DIDS_TPM_STAGE_CERTIFY with EPROTO.
int dids_tpm_certify(dids_tpm *tpm, const unsigned char ak_unique[32], enum dids_tpm_key kind,
                     const unsigned char unique[32],
                     const unsigned char *nonce, size_t nonce_size, struct dids_tpm_bytes *attest,
                     struct dids_tpm_bytes *signature, struct dids_tpm_bytes *app_public,
                     struct dids_tpm_bytes *app_name, struct dids_tpm_bytes *ak_public,
                     struct dids_tpm_failure *failure);

/// The platform attestation keys DeviceID knows (docs/HARDWARE-ID.md, "Platform attestation
/// keys"): an AK a cloud's virtual TPM keeps, with a certificate in NV from the cloud's vTPM CA.
/// Azure (Trusted Launch, Confidential VMs): AK persistent at 0x81000003, certificate 0x01c101d0.
/// GCE (Shielded VMs): made in the endorsement hierarchy from the TPMT_PUBLIC template in NV,
/// RSA's certificate 0x01c10000 and template 0x01c10001, ECC's 0x01c10002 and 0x01c10003.
enum dids_tpm_platform_ak {
    DIDS_TPM_PLATFORM_AK_AZURE,
    DIDS_TPM_PLATFORM_AK_GCE_RSA,
    DIDS_TPM_PLATFORM_AK_GCE_ECC,
    DIDS_TPM_PLATFORM_AKS
};
/// Platform AK `ak`'s persistent handle (0 for one made from a template), the NV index of its
/// certificate, and that of its template (0 for a persistent one).
uint32_t dids_tpm_platform_ak_handle(enum dids_tpm_platform_ak ak);
uint32_t dids_tpm_platform_ak_certificate_index(enum dids_tpm_platform_ak ak);
uint32_t dids_tpm_platform_ak_template_index(enum dids_tpm_platform_ak ak);
/// Platform AK `ak`'s certificate as its NV index holds it, when the TPM holds both the key (or
/// its template) and the index; `certificate->size` 0 when it lacks either. 1, or 0 with `failure`
/// set.
int dids_tpm_platform_ak_certificate(dids_tpm *tpm, enum dids_tpm_platform_ak ak, struct dids_tpm_bytes *certificate,
                                     struct dids_tpm_failure *failure);
/// TPM2_Certify of the attestation key of `ak_unique` by platform AK `ak` over `nonce`, in the
/// platform AK's own signing scheme: the TPMS_ATTEST as signed and the marshalled TPMT_SIGNATURE
/// (RSASSA or ECDSA). A template that is not a TPMT_PUBLIC fails at DIDS_TPM_STAGE_PLATFORM_AK
/// with EBADMSG.
int dids_tpm_platform_certify(dids_tpm *tpm, enum dids_tpm_platform_ak ak, const unsigned char ak_unique[32],
                              const unsigned char *nonce, size_t nonce_size, struct dids_tpm_bytes *attest,
                              struct dids_tpm_bytes *signature, struct dids_tpm_failure *failure);

/// The app's assertion counter (docs/HARDWARE-ID.md, "Assertions"): the NV counter index whose
/// authPolicy is `tag` (SHA-256 of the counter label and the app id), at the owner-range slot the
/// tag names or one of the next few; defined there when absent. `value` is a count this call
/// took and no other process can take (read, incremented, read again: see session/counter.c),
/// `index` the NV handle. 1, or 0 with `failure` set.
int dids_tpm_counter_increment(dids_tpm *tpm, const unsigned char tag[32], uint32_t *index, uint64_t *value,
                               struct dids_tpm_failure *failure);
/// TPM2_Sign of `digest` (32 bytes: SHA-256) by the `kind` key of `unique` (the credential key),
/// ECDSA with SHA-256: the marshalled TPMT_SIGNATURE, and the key's marshalled TPMT_PUBLIC.
int dids_tpm_sign(dids_tpm *tpm, enum dids_tpm_key kind, const unsigned char unique[32], const unsigned char digest[32],
                  struct dids_tpm_bytes *signature, struct dids_tpm_bytes *public_area,
                  struct dids_tpm_failure *failure);

/// The this-device-only binding (docs/HARDWARE-ID.md, "This-device-only binding"): ECDH with the
/// binding key made from `unique` and `policy`: none (NULL) for this-device-only, or for
/// this-device-only+pcr7 the 32-byte authPolicy of PolicyPCR over PCR 7 as it was at wrapping and
/// PolicyAuthValue
/// (wrap fills `policy` with it, computed by the TPM in a trial session; unwrap takes it back),
/// which makes another key of the same TPM that only a policy session satisfying it can use. Wrap: TPM2_ECDH_KeyGen makes an ephemeral key pair on the
/// binding key's curve and gives its public point (`ephemeral`, x ‖ y, 64 bytes) and the shared
/// point's x (`shared`, 32 bytes); nothing secret stays in the TPM. Unwrap: TPM2_ECDH_ZGen of
/// `ephemeral` by the binding key gives the same `shared` — on the TPM that wrapped it, until its
/// owner hierarchy is cleared, and on no other. Both give the binding key's public point (`key`,
/// x ‖ y, 64 bytes), which names the TPM the wrapping belongs to. 1, or 0 with `failure` set.
int dids_tpm_binding_wrap(dids_tpm *tpm, const unsigned char unique[32], struct dids_tpm_bytes *policy,
                          struct dids_tpm_bytes *key, struct dids_tpm_bytes *ephemeral, struct dids_tpm_bytes *shared,
                          struct dids_tpm_failure *failure);
/// Unwrap: `key` is filled first, so that a caller finding another TPM's key can stop there:
/// with `ephemeral` NULL, nothing but the key is asked. With a `policy`, ZGen runs in a policy
/// session of PolicyPCR over PCR 7 as it is now (and PolicyAuthValue); when the TPM refuses it for that policy
/// (TPM_RC_POLICY_FAIL: PCR 7 is not what it was at wrapping) the answer is 1 with `shared`
/// empty (size 0), `key` filled, so that the caller can tell this from another TPM's key.
int dids_tpm_binding_unwrap(dids_tpm *tpm, const unsigned char unique[32], const unsigned char *policy,
                            const unsigned char *ephemeral, struct dids_tpm_bytes *key, struct dids_tpm_bytes *shared,
                            struct dids_tpm_failure *failure);
/// PCR 7 of the SHA-256 bank (32 bytes into `value`), for this-device-only+pcr7's policy.
/// EOPNOTSUPP at stage BINDING when the TPM has no such bank allocated (its answer lists no value).
int dids_tpm_pcr7(dids_tpm *tpm, struct dids_tpm_bytes *value, struct dids_tpm_failure *failure);

#endif
