#include "CDeviceIDSecretService.h"

#include <libsecret/secret.h>

typedef struct {
    SecretService parent;
    volatile gint expired;
    volatile gint may_dismiss;
} DidsService;

typedef struct {
    SecretServiceClass parent_class;
} DidsServiceClass;

G_DEFINE_TYPE(DidsService, dids_service, SECRET_TYPE_SERVICE)

#define PROMPT_INTERFACE "org.freedesktop.Secret.Prompt"

unsigned int dids_service_expired_prompts(void *service) {
    return (unsigned int)g_atomic_int_get(&((DidsService *)service)->expired);
}

void dids_service_set_may_dismiss(void *service, int may_dismiss) {
    g_atomic_int_set(&((DidsService *)service)->may_dismiss, may_dismiss);
}

struct wait {
    GMainContext *context;
    gboolean completed;
    gboolean dismissed;
    GVariant *result;
};

static void on_completed(GDBusConnection *connection, const gchar *sender, const gchar *path,
                         const gchar *interface, const gchar *signal, GVariant *parameters, gpointer data) {
    (void)connection; (void)sender; (void)path; (void)interface; (void)signal;
    struct wait *w = data;
    if (w->completed || !g_variant_is_of_type(parameters, G_VARIANT_TYPE("(bv)"))) return;
    g_variant_get(parameters, "(bv)", &w->dismissed, &w->result);
    w->completed = TRUE;
}

static void on_cancelled(GCancellable *cancellable, gpointer data) {
    (void)cancellable;
    g_main_context_wakeup(((struct wait *)data)->context);
}

/* Runs `prompt` and waits for its Completed signal until `cancellable` is cancelled. */
static GVariant *run_prompt(DidsService *self, SecretPrompt *prompt, GCancellable *cancellable,
                            const GVariantType *return_type, GError **error) {
    GDBusProxy *proxy = G_DBUS_PROXY(prompt);
    GDBusConnection *connection = g_dbus_proxy_get_connection(proxy);
    const gchar *path = g_dbus_proxy_get_object_path(proxy);
    const gchar *name = g_dbus_proxy_get_name(proxy);
    struct wait w = { .context = g_main_context_new() };
    g_main_context_push_thread_default(w.context);
    /* Subscribed before Prompt is called, so that a prompt completing at once is not missed; the
       signal is delivered to this thread's private context only. */
    guint subscription = g_dbus_connection_signal_subscribe(connection, NULL, PROMPT_INTERFACE, "Completed", path,
                                                            NULL, G_DBUS_SIGNAL_FLAGS_NONE, on_completed, &w, NULL);
    gulong handler = cancellable ? g_cancellable_connect(cancellable, G_CALLBACK(on_cancelled), &w, NULL) : 0;
    GVariant *started = g_dbus_connection_call_sync(connection, name, path, PROMPT_INTERFACE, "Prompt",
                                                    g_variant_new("(s)", ""), NULL, G_DBUS_CALL_FLAGS_NO_AUTO_START,
                                                    -1, cancellable, error);
    if (started) {
        g_variant_unref(started);
        while (!w.completed && !g_cancellable_is_cancelled(cancellable)) g_main_context_iteration(w.context, TRUE);
    }
    if (cancellable) g_cancellable_disconnect(cancellable, handler);
    g_dbus_connection_signal_unsubscribe(connection, subscription);
    g_main_context_pop_thread_default(w.context);
    g_main_context_unref(w.context);

    if (!w.completed) {
        if (started || g_cancellable_is_cancelled(cancellable)) {
            /* Whatever the prompt shows (an unlock dialog, a confirmation) must not outlive the call.
               No reply is awaited: the deadline has passed. */
            if (g_atomic_int_get(&self->may_dismiss))
                g_dbus_connection_call(connection, name, path, PROMPT_INTERFACE, "Dismiss", NULL, NULL,
                                       G_DBUS_CALL_FLAGS_NO_AUTO_START, -1, NULL, NULL, NULL);
            g_atomic_int_inc(&self->expired);
            g_clear_error(error);
            g_set_error_literal(error, SECRET_ERROR, SECRET_ERROR_IS_LOCKED,
                                "a confirmation or unlock is waiting for the user; the prompt expired at the deadline");
        }
        return NULL;
    }
    if (w.dismissed) {
        if (w.result) g_variant_unref(w.result);
        g_set_error_literal(error, SECRET_ERROR, SECRET_ERROR_IS_LOCKED, "the prompt was dismissed");
        return NULL;
    }
    if (return_type && w.result && !g_variant_is_of_type(w.result, return_type)) {
        g_variant_unref(w.result);
        g_set_error(error, SECRET_ERROR, SECRET_ERROR_PROTOCOL, "the prompt completed with an unexpected result");
        return NULL;
    }
    return w.result;
}

static GVariant *prompt_sync(SecretService *self, SecretPrompt *prompt, GCancellable *cancellable,
                             const GVariantType *return_type, GError **error) {
    return run_prompt((DidsService *)self, prompt, cancellable, return_type, error);
}

struct task_data {
    SecretPrompt *prompt;
    GVariantType *return_type;
};

static void task_data_free(gpointer p) {
    struct task_data *d = p;
    g_object_unref(d->prompt);
    if (d->return_type) g_variant_type_free(d->return_type);
    g_free(d);
}

static void prompt_in_thread(GTask *task, gpointer source, gpointer data, GCancellable *cancellable) {
    struct task_data *d = data;
    GError *error = NULL;
    GVariant *result = run_prompt(source, d->prompt, cancellable, d->return_type, &error);
    if (result) g_task_return_pointer(task, result, (GDestroyNotify)g_variant_unref);
    else g_task_return_error(task, error);
}

/* libsecret's synchronous calls (create, delete, unlock) run its asynchronous code on a private
   loop and come here for a prompt: the blocking wait runs on a worker thread. */
static void prompt_async(SecretService *self, SecretPrompt *prompt, const GVariantType *return_type,
                         GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data) {
    GTask *task = g_task_new(self, cancellable, callback, user_data);
    struct task_data *d = g_new0(struct task_data, 1);
    d->prompt = g_object_ref(prompt);
    d->return_type = return_type ? g_variant_type_copy(return_type) : NULL;
    g_task_set_task_data(task, d, task_data_free);
    g_task_set_return_on_cancel(task, FALSE);
    g_task_run_in_thread(task, prompt_in_thread);
    g_object_unref(task);
}

static GVariant *prompt_finish(SecretService *self, GAsyncResult *result, GError **error) {
    (void)self;
    return g_task_propagate_pointer(G_TASK(result), error);
}

static void dids_service_class_init(DidsServiceClass *klass) {
    SecretServiceClass *service = SECRET_SERVICE_CLASS(klass);
    service->prompt_sync = prompt_sync;
    service->prompt_async = prompt_async;
    service->prompt_finish = prompt_finish;
}

static void dids_service_init(DidsService *self) { self->may_dismiss = 1; }
