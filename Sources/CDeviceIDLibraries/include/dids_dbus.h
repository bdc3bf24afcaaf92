#ifndef DIDS_DBUS_H
#define DIDS_DBUS_H
// libdbus (DIDS_LIBRARY_DBUS): the Secret Service's second transport, in a process forked from one
// where GLib's D-Bus already ran (Sources/DeviceID/SecretService/Transports/LibDBusTransport.swift)
// or where libsecret cannot be loaded. Each dids_dbus_X is dbus_X.
//
// The few types below are libdbus's public ABI, stable since 1.0 (dbus-types.h, dbus-errors.h,
// dbus-message.h). With DIDS_CHECK_AGAINST_REAL_HEADERS the real headers declare them instead.
#include <stdint.h>

// The public structures' members, as macros: Tests/c/check_library_prototypes.c lays them out
// beside the real ones and compares size and alignment.
#define DIDS_DBUS_ERROR_MEMBERS \
    const char *name; \
    const char *message; \
    unsigned int dummy1 : 1; \
    unsigned int dummy2 : 1; \
    unsigned int dummy3 : 1; \
    unsigned int dummy4 : 1; \
    unsigned int dummy5 : 1; \
    void *padding1;
#define DIDS_DBUS_MESSAGE_ITER_MEMBERS \
    void *dummy1; \
    void *dummy2; \
    dbus_uint32_t dummy3; \
    int dummy4, dummy5, dummy6, dummy7, dummy8, dummy9, dummy10, dummy11; \
    int pad1; \
    void *pad2; \
    void *pad3;

#ifndef DIDS_CHECK_AGAINST_REAL_HEADERS
typedef uint32_t dbus_uint32_t;
typedef dbus_uint32_t dbus_bool_t;
typedef struct DBusConnection DBusConnection;
typedef struct DBusMessage DBusMessage;
typedef struct DBusError { DIDS_DBUS_ERROR_MEMBERS } DBusError;
typedef struct DBusMessageIter { DIDS_DBUS_MESSAGE_ITER_MEMBERS } DBusMessageIter;
#endif

// The functions DeviceID calls: return type, name, parameters, arguments.
#define DIDS_DBUS_FUNCTIONS(X, XV) \
    XV(dbus_connection_close, (DBusConnection *c), (c)) \
    X(dbus_bool_t, dbus_connection_get_is_authenticated, (DBusConnection *c), (c)) \
    X(DBusConnection *, dbus_connection_open_private, (const char *address, DBusError *e), (address, e)) \
    X(DBusMessage *, dbus_connection_pop_message, (DBusConnection *c), (c)) \
    X(dbus_bool_t, dbus_connection_read_write, (DBusConnection *c, int timeout), (c, timeout)) \
    X(dbus_bool_t, dbus_connection_send, (DBusConnection *c, DBusMessage *m, dbus_uint32_t *serial), (c, m, serial)) \
    X(DBusMessage *, dbus_connection_send_with_reply_and_block, \
      (DBusConnection *c, DBusMessage *m, int timeout, DBusError *e), (c, m, timeout, e)) \
    XV(dbus_connection_set_exit_on_disconnect, (DBusConnection *c, dbus_bool_t exit), (c, exit)) \
    XV(dbus_connection_unref, (DBusConnection *c), (c)) \
    XV(dbus_error_free, (DBusError *e), (e)) \
    XV(dbus_error_init, (DBusError *e), (e)) \
    XV(dbus_free, (void *memory), (memory)) \
    X(const char *, dbus_message_get_path, (DBusMessage *m), (m)) \
    X(const char *, dbus_message_get_sender, (DBusMessage *m), (m)) \
    X(dbus_bool_t, dbus_message_is_signal, (DBusMessage *m, const char *iface, const char *name), (m, iface, name)) \
    X(dbus_bool_t, dbus_message_iter_append_basic, (DBusMessageIter *i, int type, const void *value), (i, type, value)) \
    XV(dbus_message_iter_abandon_container, (DBusMessageIter *i, DBusMessageIter *sub), (i, sub)) \
    X(dbus_bool_t, dbus_message_iter_append_fixed_array, (DBusMessageIter *i, int type, const void *value, int n), \
      (i, type, value, n)) \
    X(dbus_bool_t, dbus_message_iter_close_container, (DBusMessageIter *i, DBusMessageIter *sub), (i, sub)) \
    X(int, dbus_message_iter_get_arg_type, (DBusMessageIter *i), (i)) \
    XV(dbus_message_iter_get_basic, (DBusMessageIter *i, void *value), (i, value)) \
    XV(dbus_message_iter_get_fixed_array, (DBusMessageIter *i, void *value, int *n), (i, value, n)) \
    X(char *, dbus_message_iter_get_signature, (DBusMessageIter *i), (i)) \
    X(dbus_bool_t, dbus_message_iter_init, (DBusMessage *m, DBusMessageIter *i), (m, i)) \
    XV(dbus_message_iter_init_append, (DBusMessage *m, DBusMessageIter *i), (m, i)) \
    X(dbus_bool_t, dbus_message_iter_next, (DBusMessageIter *i), (i)) \
    X(dbus_bool_t, dbus_message_iter_open_container, \
      (DBusMessageIter *i, int type, const char *signature, DBusMessageIter *sub), (i, type, signature, sub)) \
    XV(dbus_message_iter_recurse, (DBusMessageIter *i, DBusMessageIter *sub), (i, sub)) \
    X(DBusMessage *, dbus_message_new_method_call, \
      (const char *dest, const char *path, const char *iface, const char *method), (dest, path, iface, method)) \
    XV(dbus_message_set_no_reply, (DBusMessage *m, dbus_bool_t no_reply), (m, no_reply)) \
    XV(dbus_message_unref, (DBusMessage *m), (m))

#ifndef DIDS_CHECK_AGAINST_REAL_HEADERS
#define DIDS_LIBDBUS_DECLARE(ret, name, params, args) ret dids_##name params;
#define DIDS_LIBDBUS_DECLARE_VOID(name, params, args) void dids_##name params;
DIDS_DBUS_FUNCTIONS(DIDS_LIBDBUS_DECLARE, DIDS_LIBDBUS_DECLARE_VOID)
#endif

#endif
