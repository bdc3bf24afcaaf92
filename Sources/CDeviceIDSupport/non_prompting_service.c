#include "CDeviceIDSecretService.h"

#include <libsecret/secret.h>

typedef SecretService DidsNonPromptingService;
typedef SecretServiceClass DidsNonPromptingServiceClass;

G_DEFINE_TYPE(DidsNonPromptingService, dids_non_prompting_service, SECRET_TYPE_SERVICE)

static const char refused[] = "the Secret Service asked for a prompt, which DeviceID never shows";

static GVariant *prompt_sync(SecretService *self, SecretPrompt *prompt, GCancellable *cancellable,
                             const GVariantType *return_type, GError **error) {
    (void)self; (void)prompt; (void)cancellable; (void)return_type;
    g_set_error_literal(error, SECRET_ERROR, SECRET_ERROR_IS_LOCKED, refused);
    return NULL;
}

static void prompt_async(SecretService *self, SecretPrompt *prompt, const GVariantType *return_type,
                         GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data) {
    (void)prompt; (void)return_type;
    GTask *task = g_task_new(self, cancellable, callback, user_data);
    g_task_return_new_error(task, SECRET_ERROR, SECRET_ERROR_IS_LOCKED, "%s", refused);
    g_object_unref(task);
}

static GVariant *prompt_finish(SecretService *self, GAsyncResult *result, GError **error) {
    (void)self;
    return g_task_propagate_pointer(G_TASK(result), error);
}

static void dids_non_prompting_service_class_init(DidsNonPromptingServiceClass *klass) {
    klass->prompt_sync = prompt_sync;
    klass->prompt_async = prompt_async;
    klass->prompt_finish = prompt_finish;
}

static void dids_non_prompting_service_init(DidsNonPromptingService *self) { (void)self; }
