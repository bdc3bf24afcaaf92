#include "CDeviceIDLibraries.h"
#include "loader.h"

#include <dlfcn.h>
#include <stdio.h>

static struct dids_loadable *loadable(dids_library library) {
    switch (library) {
    case DIDS_LIBRARY_GLIB: return &dids_glib_loadable;
    case DIDS_LIBRARY_SECRET: return &dids_secret_loadable;
    case DIDS_LIBRARY_CRYPTO: return &dids_crypto_loadable;
    case DIDS_LIBRARY_DBUS: return &dids_dbus_loadable;
    }
    return NULL;
}

// pthread_once passes no argument: one trampoline per library.
static void load(struct dids_loadable *l) {
    // RTLD_LOCAL: nothing of it is offered to later dlopens (it cannot clash with another copy);
    // RTLD_NODELETE: never unloaded, as the resolved pointers are kept for the process's life.
    void *handle = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (handle == NULL) {
        const char *why = dlerror();
        snprintf(l->failure, sizeof l->failure, "cannot load %s (install %s): %s", l->soname, l->package,
                 why != NULL ? why : "not found");
        return;
    }
    for (size_t i = 0; i < l->count; i++) {
        // dlsym on a handle searches the library and then what it depends on: GLib's and
        // GObject's functions come from GIO's handle.
        void *symbol = dlsym(handle, l->names[i]);
        if (symbol == NULL) {
            snprintf(l->failure, sizeof l->failure, "%s has no %s: it is too old (%s or later is needed, from %s)",
                     l->soname, l->names[i], l->oldest, l->package);
            return;
        }
        *l->slots[i] = symbol;
    }
    __atomic_store_n(&l->status, 0, __ATOMIC_RELEASE);
}

static void load_glib(void) { load(&dids_glib_loadable); }
static void load_secret(void) { load(&dids_secret_loadable); }
static void load_crypto(void) { load(&dids_crypto_loadable); }
static void load_dbus(void) { load(&dids_dbus_loadable); }

int dids_library_load(dids_library library) {
    struct dids_loadable *l = loadable(library);
    if (l == NULL) return -1;
    switch (library) {
    case DIDS_LIBRARY_GLIB: pthread_once(&l->once, load_glib); break;
    case DIDS_LIBRARY_SECRET: pthread_once(&l->once, load_secret); break;
    case DIDS_LIBRARY_CRYPTO: pthread_once(&l->once, load_crypto); break;
    case DIDS_LIBRARY_DBUS: pthread_once(&l->once, load_dbus); break;
    }
    return l->status;
}

const char *dids_library_failure(dids_library library) {
    struct dids_loadable *l = loadable(library);
    if (l == NULL) return "no such library";
    return l->status == 0 ? "" : l->failure;
}

int dids_library_is_loaded(dids_library library) {
    struct dids_loadable *l = loadable(library);
    return l != NULL && __atomic_load_n(&l->status, __ATOMIC_ACQUIRE) == 0;
}
