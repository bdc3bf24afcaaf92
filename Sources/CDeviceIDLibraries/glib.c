#include "CDeviceIDLibraries.h"
#include "dids_loader.h"

DIDS_STATIC_POINTERS(DIDS_GLIB_FUNCTIONS)
DIDS_LOADABLE(dids_glib_loadable, DIDS_GLIB_FUNCTIONS, "libgio-2.0.so.0",
              "libglib2.0-0, libglib2.0-0t64 on Debian 13", "GLib 2.74");
DIDS_WRAPPERS(DIDS_GLIB_FUNCTIONS)
