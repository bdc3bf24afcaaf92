#include "CDeviceIDLibraries.h"
#include "dids_loader.h"

DIDS_STATIC_POINTERS(DIDS_SECRET_FUNCTIONS)
DIDS_LOADABLE(dids_secret_loadable, DIDS_SECRET_FUNCTIONS, "libsecret-1.so.0",
              "libsecret-1-0", "libsecret 0.20.5");
DIDS_WRAPPERS(DIDS_SECRET_FUNCTIONS)
