/* The Embedded Swift standard library seeds Hasher (every Set and Dictionary) with arc4random_buf,
 * which glibc has had only since 2.36: a reference to it alone made the library and the command
 * need glibc 2.36 (Debian 12), where everything else asks for 2.31 at most. This definition, hidden
 * (no caller outside the library or the command sees it), answers from getrandom(2), as glibc's
 * does; like glibc's, it cannot report a failure, so it ends the process on one — which getrandom
 * gives only for a bad buffer, or a kernel older than 3.17. */
#include "CDeviceIDUUID.h"

#include <stdlib.h>

__attribute__((visibility("hidden"))) void arc4random_buf(void *buffer, size_t size);

void arc4random_buf(void *buffer, size_t size) {
    if (dids_random_fill(buffer, size) != 0) abort();
}
