#include "CDeviceIDLibraries.h"
#include "loader.h"

#define POINTER(ret, name, params, args) static ret(*p_##name) params;
#define POINTER_VOID(name, params, args) static void(*p_##name) params;
DIDS_DBUS_FUNCTIONS(POINTER, POINTER_VOID)

#define NAME(ret, name, params, args) #name,
#define NAME_VOID(name, params, args) #name,
static const char *const names[] = {DIDS_DBUS_FUNCTIONS(NAME, NAME_VOID)};
#define SLOT(ret, name, params, args) DIDS_SLOT(p_##name),
#define SLOT_VOID(name, params, args) DIDS_SLOT(p_##name),
static void **const slots[] = {DIDS_DBUS_FUNCTIONS(SLOT, SLOT_VOID)};

struct dids_loadable dids_dbus_loadable = {
    .soname = "libdbus-1.so.3",
    .package = "libdbus-1-3",
    .oldest = "1.14",
    .names = names,
    .slots = slots,
    .count = sizeof names / sizeof names[0],
    .status = DIDS_LIBRARY_FAILED,
};

#define CALL(ret, name, params, args) ret dids_##name params { return p_##name args; }
#define CALL_VOID(name, params, args) void dids_##name params { p_##name args; }
DIDS_DBUS_FUNCTIONS(CALL, CALL_VOID)
