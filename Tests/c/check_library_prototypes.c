// The libraries DeviceID loads on first use (Sources/CDeviceIDLibraries) are declared there by
// hand, so that building needs none of their headers. This file holds those declarations to the
// real headers of the installed GLib, libsecret, OpenSSL and libdbus: every function's type, every
// constant, scalar typedef, callback type and public structure. It only has to compile
// (scripts/test runs it on this machine and scripts/fresh-root on clean Debian 12 and 13 roots):
//
//   cc -std=c11 -Werror -fsyntax-only $(pkg-config --cflags libsecret-1 libcrypto dbus-1)
//      -I Sources/CDeviceIDLibraries/include Tests/c/check_library_prototypes.c
#define SECRET_API_SUBJECT_TO_CHANGE 1
// MD5() is deprecated since OpenSSL 3.0, not removed: DeviceID calls it only where EVP_MD_fetch
// says the default provider serves MD5 (dids_crypto.h).
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <dbus/dbus.h>
#include <gio/gio.h>
#include <gio/gunixfdlist.h>
#include <libsecret/secret.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/md5.h>
#include <openssl/provider.h>

#define DIDS_CHECK_AGAINST_REAL_HEADERS 1
#include "dids_crypto.h"
#include "dids_dbus.h"
#include "dids_glib.h"

#include <stddef.h>

#define SAME_TYPE(a, b, what) _Static_assert(__builtin_types_compatible_p(a, b), what)

// Functions: the declared prototype is the real one. Through a pointer's initialisation (an error
// under -Werror if the types differ), which ignores what is only an attribute (G_GNUC_CONST).
#define FUNCTION(ret, name, params, args) ret(*const probe_##name) params = name;
#define FUNCTION_VOID(name, params, args) void(*const probe_##name) params = name;
DIDS_GLIB_FUNCTIONS(FUNCTION, FUNCTION_VOID)
DIDS_SECRET_FUNCTIONS(FUNCTION, FUNCTION_VOID)
DIDS_CRYPTO_FUNCTIONS(FUNCTION, FUNCTION_VOID)
DIDS_DBUS_FUNCTIONS(FUNCTION, FUNCTION_VOID)

// Scalars: each typedef is what the declarations say (enums: the same size as int).
#define SCALAR(name, type) _Static_assert(sizeof(name) == sizeof(type) && _Alignof(name) == _Alignof(type) \
                                          && ((name)-1 < 0) == ((type)-1 < 0), #name " is not " #type);
DIDS_GLIB_SCALARS(SCALAR)
SAME_TYPE(gsize, size_t, "gsize");
SAME_TYPE(guint64, uint64_t, "guint64");
SAME_TYPE(gint32, int32_t, "gint32");

// Callbacks.
static DIDS_GSOURCEFUNC(source_func);
static DIDS_GDESTROYNOTIFY(destroy_notify);
static DIDS_GASYNCREADYCALLBACK(async_ready);
static DIDS_GDBUSSIGNALCALLBACK(signal_callback);
SAME_TYPE(__typeof__(source_func), GSourceFunc, "GSourceFunc");
SAME_TYPE(__typeof__(destroy_notify), GDestroyNotify, "GDestroyNotify");
SAME_TYPE(__typeof__(async_ready), GAsyncReadyCallback, "GAsyncReadyCallback");
SAME_TYPE(__typeof__(signal_callback), GDBusSignalCallback, "GDBusSignalCallback");

// Public structures: the declared members lay out as the real ones.
#define SAME_LAYOUT(real, members, field)                                                       \
    struct probe_##real { members };                                                            \
    _Static_assert(sizeof(struct probe_##real) == sizeof(real)                                  \
                       && _Alignof(struct probe_##real) == _Alignof(real)                       \
                       && offsetof(struct probe_##real, field) == offsetof(real, field),        \
                   #real " is laid out differently");
SAME_LAYOUT(GError, DIDS_GERROR_MEMBERS, message)
SAME_LAYOUT(DBusError, DIDS_DBUS_ERROR_MEMBERS, padding1)
SAME_LAYOUT(DBusMessageIter, DIDS_DBUS_MESSAGE_ITER_MEMBERS, pad3)
_Static_assert(offsetof(GError, domain) == 0 && offsetof(GError, code) == sizeof(GQuark), "GError");
_Static_assert(offsetof(DBusError, name) == 0 && offsetof(DBusError, message) == sizeof(void *), "DBusError");

// Constants.
_Static_assert(DIDS_G_BUS_TYPE_SESSION == G_BUS_TYPE_SESSION, "G_BUS_TYPE_SESSION");
_Static_assert(DIDS_G_DBUS_CALL_FLAGS_NONE == G_DBUS_CALL_FLAGS_NONE, "G_DBUS_CALL_FLAGS_NONE");
_Static_assert(DIDS_G_DBUS_CALL_FLAGS_NO_AUTO_START == G_DBUS_CALL_FLAGS_NO_AUTO_START, "NO_AUTO_START");
_Static_assert(DIDS_G_DBUS_SIGNAL_FLAGS_NONE == G_DBUS_SIGNAL_FLAGS_NONE, "G_DBUS_SIGNAL_FLAGS_NONE");
_Static_assert(DIDS_G_IO_ERROR_CANCELLED == G_IO_ERROR_CANCELLED, "G_IO_ERROR_CANCELLED");
_Static_assert(DIDS_G_IO_ERROR_TIMED_OUT == G_IO_ERROR_TIMED_OUT, "G_IO_ERROR_TIMED_OUT");
_Static_assert(DIDS_SECRET_ERROR_IS_LOCKED == SECRET_ERROR_IS_LOCKED, "SECRET_ERROR_IS_LOCKED");
_Static_assert(DIDS_SECRET_SERVICE_NONE == SECRET_SERVICE_NONE, "SECRET_SERVICE_NONE");
_Static_assert(DIDS_G_SOURCE_REMOVE == G_SOURCE_REMOVE, "G_SOURCE_REMOVE");
_Static_assert(DIDS_EVP_CTRL_GCM_GET_TAG == EVP_CTRL_GCM_GET_TAG, "EVP_CTRL_GCM_GET_TAG");
_Static_assert(DIDS_EVP_CTRL_GCM_SET_TAG == EVP_CTRL_GCM_SET_TAG, "EVP_CTRL_GCM_SET_TAG");
_Static_assert(DIDS_EVP_MAX_MD_SIZE == EVP_MAX_MD_SIZE, "EVP_MAX_MD_SIZE");

// Linked (-DDIDS_PROBE), the program references exactly the functions DeviceID resolves at run
// time in GLib, libsecret, libcrypto and libdbus: debian/rules gives it to dpkg-shlibdeps, which
// cannot see dlopen, to compute the packages (and oldest versions) the Debian packages recommend.
#ifdef DIDS_PROBE
int main(void) { return 0; }
#endif
