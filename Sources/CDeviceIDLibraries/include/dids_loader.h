#ifndef DIDS_LOADER_H
#define DIDS_LOADER_H
// The one loader behind dids_loadable_load: a library is a file, the package that ships it, and a
// table of the functions resolved from it (each room defines its own: glib.c, secret.c, crypto.c,
// dbus.c here, CDeviceIDTPM's tss2/esys.c). For C only: not part of the module Swift imports.
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

/// dlopen(soname, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE), counted as a load under way (a child
/// forked during one loads nothing more); NULL, with nothing tried, in such a child.
void *dids_library_dlopen(const char *soname);
/// Whether this process was forked while another thread of its parent was inside a load.
int dids_library_forked_during_a_load(void);

/// Every slot's value is a function pointer; POSIX dlsym requires that a void * can hold one.
#define DIDS_SLOT(pointer) ((void **)(void *)&(pointer))

// Each library's functions are one X-macro list, LIST(F, F_VOID), with F(ret, name, params, args)
// and F_VOID(name, params, args) (the dids_*.h headers). From it come a pointer per function,
// dids_p_NAME, which the loader fills; the loadable naming them; and, where callers outside the
// file need them, a wrapper dids_NAME per function.
#define DIDS_POINTER_(ret, name, params, args) ret(*dids_p_##name) params;
#define DIDS_POINTER_VOID_(name, params, args) void(*dids_p_##name) params;
#define DIDS_STATIC_POINTER_(ret, name, params, args) static DIDS_POINTER_(ret, name, params, args)
#define DIDS_STATIC_POINTER_VOID_(name, params, args) static DIDS_POINTER_VOID_(name, params, args)
#define DIDS_NAME_(ret, name, params, args) #name,
#define DIDS_NAME_VOID_(name, params, args) #name,
#define DIDS_SLOT_(ret, name, params, args) DIDS_SLOT(dids_p_##name),
#define DIDS_SLOT_VOID_(name, params, args) DIDS_SLOT(dids_p_##name),
#define DIDS_CALL_(ret, name, params, args) ret dids_##name params { return dids_p_##name args; }
#define DIDS_CALL_VOID_(name, params, args) void dids_##name params { dids_p_##name args; }

/// The pointers, visible to this file only (a library whose pointers several files share defines
/// them with DIDS_POINTERS and declares them extern in its internal header).
#define DIDS_STATIC_POINTERS(LIST) LIST(DIDS_STATIC_POINTER_, DIDS_STATIC_POINTER_VOID_)
#define DIDS_POINTERS(LIST) LIST(DIDS_POINTER_, DIDS_POINTER_VOID_)
#define DIDS_WRAPPERS(LIST) LIST(DIDS_CALL_, DIDS_CALL_VOID_)

/// The loadable `variable` for LIST's functions, in soname_, which package_ installs and which has
/// every function since oldest_.
#define DIDS_LOADABLE(variable, LIST, soname_, package_, oldest_)                               \
    static const char *const variable##_names[] = {LIST(DIDS_NAME_, DIDS_NAME_VOID_)};          \
    static void **const variable##_slots[] = {LIST(DIDS_SLOT_, DIDS_SLOT_VOID_)};               \
    struct dids_loadable variable = {                                                           \
        .soname = soname_,                                                                      \
        .package = package_,                                                                    \
        .oldest = oldest_,                                                                      \
        .names = variable##_names,                                                              \
        .slots = variable##_slots,                                                              \
        .count = sizeof variable##_names / sizeof variable##_names[0],                          \
        .status = DIDS_LIBRARY_FAILED,                                                          \
    }

extern struct dids_loadable dids_glib_loadable;
extern struct dids_loadable dids_secret_loadable;
extern struct dids_loadable dids_crypto_loadable;
extern struct dids_loadable dids_dbus_loadable;

#endif
