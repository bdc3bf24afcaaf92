#ifndef CDEVICEID_SECRET_SERVICE_H
#define CDEVICEID_SECRET_SERVICE_H
// A SecretService subclass that refuses every prompt. libsecret hands prompts (unlock, create a
// collection) to the service's prompt vfuncs and then waits for the prompt's Completed signal —
// forever when it never comes, and cancelling that wait hangs too. DeviceID never shows a prompt,
// so its service answers each one at once with SECRET_ERROR_IS_LOCKED. Swift cannot subclass a
// GObject type, hence this C.
#include <glib-object.h>

/// The GType of the non-prompting SecretService subclass.
GType dids_non_prompting_service_get_type(void);

#endif
