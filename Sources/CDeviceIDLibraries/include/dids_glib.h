#ifndef DIDS_GLIB_H
#define DIDS_GLIB_H
// GLib, GObject and GIO (DIDS_LIBRARY_GLIB): the Secret Service over GDBus
// (Sources/DeviceID/SecretService/Transports/GDBusTransport.swift); and libsecret
// (DIDS_LIBRARY_SECRET), for its encrypted transfer session only, which only a conversation that
// carries a caller's secret opens. Each dids_X is X. Every function here exists in GLib 2.74 and
// libsecret 0.20.5 (Debian 12) and later; the loader says which one is missing if not.
//
// The types are GLib's public ABI: opaque objects (by their real struct tags), GError, the scalar
// typedefs of an LP64 Linux, and the callback types. With DIDS_CHECK_AGAINST_REAL_HEADERS the real
// headers declare them and Tests/c/check_library_prototypes.c compares.
#include <stddef.h>
#include <stdint.h>

// Scalar types: name, and what it is here (an enum of flags is unsigned, GBusType has -1).
#define DIDS_GLIB_SCALARS(X) \
    X(gboolean, int) \
    X(gint, int) \
    X(gint32, int32_t) \
    X(guint, unsigned int) \
    X(guint32, uint32_t) \
    X(guint64, uint64_t) \
    X(gsize, size_t) \
    X(gssize, long) \
    X(GQuark, uint32_t) \
    X(GType, size_t) \
    X(gchar, char) \
    X(gpointer, void *) \
    X(gconstpointer, const void *) \
    X(GBusType, int) \
    X(GDBusCallFlags, unsigned int) \
    X(GDBusSignalFlags, unsigned int) \
    X(SecretServiceFlags, unsigned int)

#define DIDS_GERROR_MEMBERS \
    GQuark domain; \
    gint code; \
    gchar *message;

// Callback types: the shape, applied to a name.
#define DIDS_GSOURCEFUNC(name) gboolean (*name)(gpointer user_data)
#define DIDS_GDESTROYNOTIFY(name) void (*name)(gpointer data)
#define DIDS_GASYNCREADYCALLBACK(name) void (*name)(GObject * source_object, GAsyncResult *res, gpointer user_data)
#define DIDS_GDBUSSIGNALCALLBACK(name)                                                                  \
    void (*name)(GDBusConnection * connection, const gchar *sender_name, const gchar *object_path,    \
                 const gchar *interface_name, const gchar *signal_name, GVariant *parameters, gpointer user_data)

// Enumerators and their values (checked against the headers).
#define DIDS_G_BUS_TYPE_SESSION 2
#define DIDS_G_DBUS_CALL_FLAGS_NONE 0
#define DIDS_G_DBUS_CALL_FLAGS_NO_AUTO_START 1
#define DIDS_G_DBUS_SIGNAL_FLAGS_NONE 0
#define DIDS_G_IO_ERROR_CANCELLED 19
#define DIDS_G_IO_ERROR_TIMED_OUT 24
#define DIDS_SECRET_ERROR_IS_LOCKED 2
#define DIDS_SECRET_SERVICE_NONE 0
#define DIDS_G_SOURCE_REMOVE 0

#ifndef DIDS_CHECK_AGAINST_REAL_HEADERS
#define DIDS_GLIB_TYPEDEF(name, type) typedef type name;
DIDS_GLIB_SCALARS(DIDS_GLIB_TYPEDEF)
#undef DIDS_GLIB_TYPEDEF
typedef struct _GError { DIDS_GERROR_MEMBERS } GError;
typedef struct _GVariant GVariant;
typedef struct _GVariantType GVariantType;
typedef struct _GVariantBuilder GVariantBuilder;
typedef struct _GMainContext GMainContext;
typedef struct _GSource GSource;
typedef struct _GCancellable GCancellable;
typedef struct _GObject GObject;
typedef struct _GAsyncResult GAsyncResult;
typedef struct _GDBusConnection GDBusConnection;
typedef struct _GDBusProxy GDBusProxy;
typedef struct _GUnixFDList GUnixFDList;
typedef struct _SecretService SecretService;
typedef struct _SecretValue SecretValue;
typedef DIDS_GSOURCEFUNC(GSourceFunc);
typedef DIDS_GDESTROYNOTIFY(GDestroyNotify);
typedef DIDS_GASYNCREADYCALLBACK(GAsyncReadyCallback);
typedef DIDS_GDBUSSIGNALCALLBACK(GDBusSignalCallback);
#endif

// GLib, GObject and GIO (DIDS_LIBRARY_GLIB): return type, name, parameters, arguments.
#define DIDS_GLIB_FUNCTIONS(X, XV) \
    XV(g_clear_error, (GError **err), (err)) \
    XV(g_error_free, (GError *error), (error)) \
    XV(g_free, (gpointer mem), (mem)) \
    X(gboolean, g_main_context_iteration, (GMainContext *context, gboolean may_block), (context, may_block)) \
    X(GMainContext *, g_main_context_new, (void), ()) \
    XV(g_main_context_pop_thread_default, (GMainContext *context), (context)) \
    XV(g_main_context_push_thread_default, (GMainContext *context), (context)) \
    XV(g_main_context_unref, (GMainContext *context), (context)) \
    X(guint, g_source_attach, (GSource *source, GMainContext *context), (source, context)) \
    XV(g_source_destroy, (GSource *source), (source)) \
    XV(g_source_set_callback, (GSource *source, GSourceFunc func, gpointer data, GDestroyNotify notify), \
       (source, func, data, notify)) \
    XV(g_source_unref, (GSource *source), (source)) \
    X(GSource *, g_timeout_source_new, (guint interval), (interval)) \
    XV(g_variant_builder_add_value, (GVariantBuilder *builder, GVariant *value), (builder, value)) \
    X(GVariant *, g_variant_builder_end, (GVariantBuilder *builder), (builder)) \
    X(GVariantBuilder *, g_variant_builder_new, (const GVariantType *type), (type)) \
    XV(g_variant_builder_unref, (GVariantBuilder *builder), (builder)) \
    X(gboolean, g_variant_get_boolean, (GVariant *value), (value)) \
    X(GVariant *, g_variant_get_child_value, (GVariant *value, gsize index_), (value, index_)) \
    X(gconstpointer, g_variant_get_fixed_array, (GVariant *value, gsize *n_elements, gsize element_size), \
      (value, n_elements, element_size)) \
    X(const gchar *, g_variant_get_string, (GVariant *value, gsize *length), (value, length)) \
    X(const gchar *, g_variant_get_type_string, (GVariant *value), (value)) \
    X(guint32, g_variant_get_uint32, (GVariant *value), (value)) \
    X(guint64, g_variant_get_uint64, (GVariant *value), (value)) \
    X(GVariant *, g_variant_get_variant, (GVariant *value), (value)) \
    X(gboolean, g_variant_is_container, (GVariant *value), (value)) \
    X(gsize, g_variant_n_children, (GVariant *value), (value)) \
    X(GVariant *, g_variant_new_boolean, (gboolean value), (value)) \
    X(GVariant *, g_variant_new_dict_entry, (GVariant *key, GVariant *value), (key, value)) \
    X(GVariant *, g_variant_new_fixed_array, \
      (const GVariantType *element_type, gconstpointer elements, gsize n_elements, gsize element_size), \
      (element_type, elements, n_elements, element_size)) \
    X(GVariant *, g_variant_new_handle, (gint32 value), (value)) \
    X(GVariant *, g_variant_new_object_path, (const gchar *object_path), (object_path)) \
    X(GVariant *, g_variant_new_string, (const gchar *string), (string)) \
    X(GVariant *, g_variant_new_tuple, (GVariant *const *children, gsize n_children), (children, n_children)) \
    X(GVariant *, g_variant_new_uint32, (guint32 value), (value)) \
    X(GVariant *, g_variant_new_uint64, (guint64 value), (value)) \
    X(GVariant *, g_variant_new_variant, (GVariant *value), (value)) \
    X(GVariant *, g_variant_ref, (GVariant *value), (value)) \
    X(GVariant *, g_variant_ref_sink, (GVariant *value), (value)) \
    XV(g_variant_unref, (GVariant *value), (value)) \
    XV(g_object_unref, (gpointer object), (object)) \
    X(GDBusConnection *, g_bus_get_sync, (GBusType bus_type, GCancellable *cancellable, GError **error), \
      (bus_type, cancellable, error)) \
    XV(g_cancellable_cancel, (GCancellable *cancellable), (cancellable)) \
    X(gboolean, g_cancellable_is_cancelled, (GCancellable *cancellable), (cancellable)) \
    X(GCancellable *, g_cancellable_new, (void), ()) \
    XV(g_dbus_connection_call, \
       (GDBusConnection *connection, const gchar *bus_name, const gchar *object_path, const gchar *interface_name, \
        const gchar *method_name, GVariant *parameters, const GVariantType *reply_type, GDBusCallFlags flags, \
        gint timeout_msec, GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data), \
       (connection, bus_name, object_path, interface_name, method_name, parameters, reply_type, flags, timeout_msec, \
        cancellable, callback, user_data)) \
    X(GVariant *, g_dbus_connection_call_with_unix_fd_list_sync, \
      (GDBusConnection *connection, const gchar *bus_name, const gchar *object_path, const gchar *interface_name, \
       const gchar *method_name, GVariant *parameters, const GVariantType *reply_type, GDBusCallFlags flags, \
       gint timeout_msec, GUnixFDList *fd_list, GUnixFDList **out_fd_list, GCancellable *cancellable, \
       GError **error), \
      (connection, bus_name, object_path, interface_name, method_name, parameters, reply_type, flags, timeout_msec, \
       fd_list, out_fd_list, cancellable, error)) \
    X(const gchar *, g_dbus_connection_get_unique_name, (GDBusConnection *connection), (connection)) \
    X(gboolean, g_dbus_connection_is_closed, (GDBusConnection *connection), (connection)) \
    XV(g_dbus_connection_set_exit_on_close, (GDBusConnection *connection, gboolean exit_on_close), \
       (connection, exit_on_close)) \
    X(guint, g_dbus_connection_signal_subscribe, \
      (GDBusConnection *connection, const gchar *sender, const gchar *interface_name, const gchar *member, \
       const gchar *object_path, const gchar *arg0, GDBusSignalFlags flags, GDBusSignalCallback callback, \
       gpointer user_data, GDestroyNotify user_data_free_func), \
      (connection, sender, interface_name, member, object_path, arg0, flags, callback, user_data, user_data_free_func)) \
    XV(g_dbus_connection_signal_unsubscribe, (GDBusConnection *connection, guint subscription_id), \
       (connection, subscription_id)) \
    X(gchar *, g_dbus_error_encode_gerror, (const GError *error), (error)) \
    X(gchar *, g_dbus_error_get_remote_error, (const GError *error), (error)) \
    X(gboolean, g_dbus_error_is_remote_error, (const GError *error), (error)) \
    X(GQuark, g_dbus_error_quark, (void), ()) \
    X(gboolean, g_dbus_error_strip_remote_error, (GError *error), (error)) \
    XV(g_dbus_proxy_set_default_timeout, (GDBusProxy *proxy, gint timeout_msec), (proxy, timeout_msec)) \
    X(GQuark, g_io_error_quark, (void), ()) \
    X(gint, g_unix_fd_list_append, (GUnixFDList *list, gint fd, GError **error), (list, fd, error)) \
    X(GUnixFDList *, g_unix_fd_list_new, (void), ())

// libsecret (DIDS_LIBRARY_SECRET): its encrypted transfer session only.
#define DIDS_SECRET_FUNCTIONS(X, XV) \
    X(GQuark, secret_error_get_quark, (void), ()) \
    X(SecretValue *, secret_service_decode_dbus_secret, (SecretService *service, GVariant *value), (service, value)) \
    X(GVariant *, secret_service_encode_dbus_secret, (SecretService *service, SecretValue *value), (service, value)) \
    X(gboolean, secret_service_ensure_session_sync, (SecretService *self, GCancellable *cancellable, GError **error), \
      (self, cancellable, error)) \
    X(const gchar *, secret_service_get_session_dbus_path, (SecretService *self), (self)) \
    X(GType, secret_service_get_type, (void), ()) \
    X(SecretService *, secret_service_open_sync, \
      (GType service_gtype, const gchar *service_bus_name, SecretServiceFlags flags, GCancellable *cancellable, \
       GError **error), \
      (service_gtype, service_bus_name, flags, cancellable, error)) \
    X(const gchar *, secret_value_get, (SecretValue *value, gsize *length), (value, length)) \
    X(const gchar *, secret_value_get_content_type, (SecretValue *value), (value)) \
    X(SecretValue *, secret_value_new, (const gchar *secret, gssize length, const gchar *content_type), \
      (secret, length, content_type)) \
    XV(secret_value_unref, (gpointer value), (value))

#ifndef DIDS_CHECK_AGAINST_REAL_HEADERS
#define DIDS_GLIB_DECLARE(ret, name, params, args) ret dids_##name params;
#define DIDS_GLIB_DECLARE_VOID(name, params, args) void dids_##name params;
DIDS_GLIB_FUNCTIONS(DIDS_GLIB_DECLARE, DIDS_GLIB_DECLARE_VOID)
DIDS_SECRET_FUNCTIONS(DIDS_GLIB_DECLARE, DIDS_GLIB_DECLARE_VOID)
#undef DIDS_GLIB_DECLARE
#undef DIDS_GLIB_DECLARE_VOID
#endif

#endif
