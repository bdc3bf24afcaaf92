#include "CDeviceIDLibraries.h"
#include "dids_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

dids_loadable *dids_library_loadable(dids_library library) {
    switch (library) {
    case DIDS_LIBRARY_GLIB: return &dids_glib_loadable;
    case DIDS_LIBRARY_SECRET: return &dids_secret_loadable;
    case DIDS_LIBRARY_CRYPTO: return &dids_crypto_loadable;
    case DIDS_LIBRARY_DBUS: return &dids_dbus_loadable;
    }
    return NULL;
}

// One lock for every load (they are rare), made free again in a forked child: a thread of the
// parent may have held it at the fork. A loaded or absent library is answered without it.
//
// A child forked while another thread was inside dlopen() of a library
// holds that library half relocated and half initialised, and a dlopen() of it in the child
// returns it as it is. So the loads DeviceID makes are counted, and such a child loads nothing
// more: each library it did not have whole fails with words. (Not counted: what the libraries
// load themselves, later, such as OpenSSL's providers and GIO's modules.) (fork() is not made to wait for the load:
// before glibc 2.36 its prepare handlers run under the lock pthread_atfork takes, which a
// constructor inside that load may want.)
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int loads_under_way;  // __atomic builtins only
static int forked_during_a_load;
static void reinitialize_in_child(void) {
    pthread_mutex_init(&lock, NULL);
    if (__atomic_load_n(&loads_under_way, __ATOMIC_ACQUIRE) > 0) forked_during_a_load = 1;
    __atomic_store_n(&loads_under_way, 0, __ATOMIC_RELEASE);
}
// Registered when the library is loaded: fork() runs only the handlers registered before it began
// (glibc counts them, then runs the prepare handlers with its lock released), so one registered by
// another thread's first call during a fork was skipped in that child (docs/ROBUSTNESS.md, "A TPM
// that changes, a process that forks").
__attribute__((constructor)) static void register_atfork(void) { (void)pthread_atfork(NULL, NULL, reinitialize_in_child); }

static const char forked_words[] = "this process was forked while another thread of its parent was loading a "
    "library, which the child has half loaded: DeviceID loads nothing more in it (a process started anew, or "
    "forked after the parent's first call of the kind, loads as usual)";

void *dids_library_dlopen(const char *soname) {
    if (forked_during_a_load) return NULL;
    __atomic_fetch_add(&loads_under_way, 1, __ATOMIC_ACQ_REL);
    // RTLD_LOCAL: nothing of it is offered to later dlopens (it cannot clash with another copy);
    // RTLD_NODELETE: never unloaded, as the resolved pointers are kept for the process's life.
    void *handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    __atomic_fetch_sub(&loads_under_way, 1, __ATOMIC_ACQ_REL);
    return handle;
}

int dids_library_forked_during_a_load(void) { return forked_during_a_load; }

// What dlopen says when the process lacks a resource for now (memory, address space,
// descriptors): worth trying again later. Anything else — no such file, not a library, a
// function missing — is final.
static int is_transient(const char *why) {
    return strstr(why, "Cannot allocate memory") != NULL || strstr(why, "Too many open files") != NULL
        || strstr(why, "failed to map segment") != NULL || strstr(why, "Resource temporarily unavailable") != NULL;
}

// Called with the lock held; sets l->status.
static void load(struct dids_loadable *l) {
    if (forked_during_a_load) {
        // Not ABSENT: the library is installed, and a caller that would do without an absent one
        // (libdbus for GLib, a plain session for libsecret) must not do so here.
        snprintf(l->failure, sizeof l->failure, "cannot load %s: %s", l->soname, forked_words);
        __atomic_store_n(&l->status, DIDS_LIBRARY_HALF_LOADED, __ATOMIC_RELEASE);
        return;
    }
    void *handle = dids_library_dlopen(l->soname);
    if (handle == NULL) {
        const char *why = dlerror();
        if (why == NULL) why = "not found";
        snprintf(l->failure, sizeof l->failure, "cannot load %s (install %s): %s", l->soname, l->package, why);
        __atomic_store_n(&l->status, is_transient(why) ? DIDS_LIBRARY_FAILED : DIDS_LIBRARY_ABSENT,
                         __ATOMIC_RELEASE);
        return;
    }
    for (size_t i = 0; i < l->count; i++) {
        // dlsym on a handle searches the library and then what it depends on: GLib's and
        // GObject's functions come from GIO's handle.
        void *symbol = dlsym(handle, l->names[i]);
        if (symbol == NULL) {
            snprintf(l->failure, sizeof l->failure, "%s has no %s: it is too old (%s or later is needed, from %s)",
                     l->soname, l->names[i], l->oldest, l->package);
            __atomic_store_n(&l->status, DIDS_LIBRARY_ABSENT, __ATOMIC_RELEASE);
            return;
        }
        *l->slots[i] = symbol;
    }
    __atomic_store_n(&l->status, DIDS_LIBRARY_LOADED, __ATOMIC_RELEASE);
}

int dids_loadable_load(dids_loadable *l) {
    if (l == NULL) return DIDS_LIBRARY_ABSENT;
    int status = __atomic_load_n(&l->status, __ATOMIC_ACQUIRE);
    if (status == DIDS_LIBRARY_LOADED || status == DIDS_LIBRARY_ABSENT) return status;
    pthread_mutex_lock(&lock);
    if (__atomic_load_n(&l->status, __ATOMIC_ACQUIRE) == DIDS_LIBRARY_FAILED) load(l);
    status = __atomic_load_n(&l->status, __ATOMIC_ACQUIRE);
    pthread_mutex_unlock(&lock);
    return status;
}

void dids_loadable_failure(dids_loadable *l, char *out, size_t size) {
    if (size == 0) return;
    pthread_mutex_lock(&lock);
    snprintf(out, size, "%s", l == NULL ? "no such library"
             : __atomic_load_n(&l->status, __ATOMIC_ACQUIRE) == DIDS_LIBRARY_LOADED ? "" : l->failure);
    pthread_mutex_unlock(&lock);
}

int dids_loadable_is_loaded(dids_loadable *l) {
    return l != NULL && __atomic_load_n(&l->status, __ATOMIC_ACQUIRE) == DIDS_LIBRARY_LOADED;
}
