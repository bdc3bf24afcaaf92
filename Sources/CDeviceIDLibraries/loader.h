#ifndef DIDS_LOADER_H
#define DIDS_LOADER_H
// The one loader behind dids_library_load: a library is a file, the package that ships it, and a
// table of the functions resolved from it (the dids_*.c files define one each).
#include <stddef.h>

struct dids_loadable {
    const char *soname;          // what dlopen is given: the ABI, not a development symlink
    const char *package;         // the Debian package(s) that install it, for the failure text
    const char *oldest;          // the oldest version known to have every function below
    const char *const *names;    // functions to resolve
    void **const *slots;         // where each goes
    size_t count;
    int status;                  // DIDS_LIBRARY_LOADED, _FAILED (not yet, or for now) or _ABSENT
    char failure[384];
};

/// Every slot's value is a function pointer; POSIX dlsym requires that a void * can hold one.
#define DIDS_SLOT(pointer) ((void **)(void *)&(pointer))

extern struct dids_loadable dids_glib_loadable;
extern struct dids_loadable dids_secret_loadable;
extern struct dids_loadable dids_crypto_loadable;
extern struct dids_loadable dids_dbus_loadable;
extern struct dids_loadable dids_tpm_loadable;

#endif
