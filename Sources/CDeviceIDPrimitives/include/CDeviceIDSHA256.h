#ifndef CDEVICEID_SHA256_H
#define CDEVICEID_SHA256_H
// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104) for DeviceID's own derivations: the file
// store's names and checksums, the machine fingerprint and the app-specific machine ID. systemd
// computes sd_id128_get_machine_app_specific with its own SHA-256 for the same reason: a lookup
// answered from the file store should not pay for OpenSSL's start-up (its configuration and
// providers, about 1 ms). The digests users ask for (deviceid_hash_hex) still go through OpenSSL.
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t state[8];
    uint64_t length;       /* bytes hashed so far */
    uint8_t buffer[64];
    size_t buffered;
} dids_sha256_ctx;

void dids_sha256_init(dids_sha256_ctx *ctx);
void dids_sha256_update(dids_sha256_ctx *ctx, const void *data, size_t size);
/// Writes the 32-byte digest and wipes the context.
void dids_sha256_final(dids_sha256_ctx *ctx, uint8_t out[32]);

void dids_sha256(const void *data, size_t size, uint8_t out[32]);
void dids_hmac_sha256(const void *key, size_t key_size, const void *message, size_t message_size, uint8_t out[32]);

#endif
