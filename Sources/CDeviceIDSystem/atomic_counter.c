// A 64-bit counter read without a lock: the generation of DeviceIdentity's answers, which the C
// ABI's per-thread cache compares on every call (a lock there cost ~30 ns of a ~25 ns call).
#include "CDeviceIDSystem.h"

uint64_t dids_counter_load(const uint64_t *counter) { return __atomic_load_n(counter, __ATOMIC_ACQUIRE); }

void dids_counter_increment(uint64_t *counter) { __atomic_fetch_add(counter, 1, __ATOMIC_ACQ_REL); }
