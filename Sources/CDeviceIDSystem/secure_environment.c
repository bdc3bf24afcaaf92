#define _GNU_SOURCE
#include <stdlib.h>

#include "CDeviceIDSystem.h"

const char *dids_secure_getenv(const char *name) { return secure_getenv(name); }
