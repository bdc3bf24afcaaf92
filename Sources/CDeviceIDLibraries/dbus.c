#include "CDeviceIDLibraries.h"
#include "dids_loader.h"

DIDS_STATIC_POINTERS(DIDS_DBUS_FUNCTIONS)
DIDS_LOADABLE(dids_dbus_loadable, DIDS_DBUS_FUNCTIONS, "libdbus-1.so.3", "libdbus-1-3", "1.14");
DIDS_WRAPPERS(DIDS_DBUS_FUNCTIONS)
