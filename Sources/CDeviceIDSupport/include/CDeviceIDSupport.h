#ifndef CDEVICEID_SUPPORT_H
#define CDEVICEID_SUPPORT_H
// C shims for what Swift cannot import: the SIOCETHTOOL ioctl (variadic ioctl, flexible array
// member), secure_getenv (_GNU_SOURCE). Internal to libdeviceid: the prefix keeps them out of
// the exported deviceid_* set.
#include "CDeviceIDLibc.h"
#include <stddef.h>
#include <stdint.h>
#include <sys/random.h>

#include "CDeviceIDFastPaths.h"
#include "CDeviceIDUUID.h"
#include "CDeviceIDSHA256.h"
#include "CDeviceIDLibDBus.h"

/// Reads the permanent hardware address of `ifname` with ETHTOOL_GPERMADDR.
/// Returns the address length (6 for Ethernet) and fills `out`, 0 when the driver reports none,
/// or -errno (-EOPNOTSUPP when the driver has no ethtool support).
int dids_permanent_address(const char *ifname, unsigned char *out, size_t out_size);

/// An atomic 64-bit counter (acquire loads, acquire-release increments), for Swift code that
/// must build without the Synchronization module (Embedded Swift on Linux).
uint64_t dids_counter_load(const uint64_t *counter);
void dids_counter_increment(uint64_t *counter);

/// secure_getenv(3): NULL in a set-user-ID, set-group-ID or capability-raised process.
const char *dids_secure_getenv(const char *name);

#endif

#ifndef CDEVICEID_SUPPORT_ERRORS
#define CDEVICEID_SUPPORT_ERRORS
/// The detail text of the calling thread's last failure (thread-local storage, which Swift
/// cannot declare). `dids_set_last_error` copies and truncates at 511 bytes.
void dids_set_last_error(const char *text);
const char *dids_last_error(void);
#endif
