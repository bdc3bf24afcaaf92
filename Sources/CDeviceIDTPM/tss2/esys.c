// tpm2-tss's ESAPI, the TPM room's one library, loaded on first use by the one loader
// (CDeviceIDLibraries) as systemd's tpm2-util.c declares its DLSYM list: every function the
// conversation calls, resolved from libtss2-esys.so.0 (and libtss2-mu.so.0 through it).
#include "tss2.h"
#include "dids_loader.h"

DIDS_POINTERS(DIDS_TPM_FUNCTIONS)
DIDS_LOADABLE(esys_loadable, DIDS_TPM_FUNCTIONS, "libtss2-esys.so.0",
              "libtss2-esys-3.0.2-0, libtss2-esys-3.0.2-0t64 on Debian 13", "tpm2-tss 3.2.1");

dids_loadable *dids_tpm_library(void) { return &esys_loadable; }
