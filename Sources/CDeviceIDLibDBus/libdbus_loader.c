#include "CDeviceIDLibDBus.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#define POINTER(ret, name, params, args) static ret(*p_##name) params;
#define POINTER_VOID(name, params, args) static void(*p_##name) params;
DIDS_LIBDBUS_FUNCTIONS(POINTER, POINTER_VOID)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded = -1;
static char failure[256] = "libdbus-1 was not loaded";

static void load(void) {
    void *library = dlopen("libdbus-1.so.3", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        snprintf(failure, sizeof failure, "cannot load libdbus-1.so.3: %s", dlerror());
        return;
    }
#define RESOLVE(ret, name, params, args)                                                       \
    if ((*(void **)&p_##name = dlsym(library, #name)) == NULL) {                               \
        snprintf(failure, sizeof failure, "libdbus-1.so.3 has no %s", #name);                  \
        return;                                                                                \
    }
#define RESOLVE_VOID(name, params, args) RESOLVE(void, name, params, args)
    DIDS_LIBDBUS_FUNCTIONS(RESOLVE, RESOLVE_VOID)
    loaded = 0;
}

int dids_libdbus_load(void) {
    pthread_once(&once, load);
    return loaded;
}

const char *dids_libdbus_error(void) { return failure; }

#define CALL(ret, name, params, args) ret dids_##name params { return p_##name args; }
#define CALL_VOID(name, params, args) void dids_##name params { p_##name args; }
DIDS_LIBDBUS_FUNCTIONS(CALL, CALL_VOID)
