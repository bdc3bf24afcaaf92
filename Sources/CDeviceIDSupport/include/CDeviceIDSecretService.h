#ifndef CDEVICEID_SECRET_SERVICE_H
#define CDEVICEID_SECRET_SERVICE_H
// A SecretService subclass whose prompts run the way the Secret Service specification means them
// and end at the caller's deadline.
//
// A prompt is not always a person: KeePassXC answers every CreateItem and Item.Delete with one,
// and KWallet every Unlock, and they complete at once when run with Prompt(""). libsecret's own
// prompter instead waits for Completed forever, and cancelling that wait hangs (libsecret 0.20).
// Here a prompt is run with an empty window id and awaited on a private main context until it
// completes or the call's GCancellable is cancelled (DeviceID's deadline); then it is dismissed
// (where that is safe) and the call fails with SECRET_ERROR_IS_LOCKED, counted by
// dids_service_expired_prompts().
// Whether a path that can show a dialog is started at all is decided by the Swift caller.
// Swift cannot subclass a GObject type, hence this C.
#include <glib-object.h>

/// The GType of DeviceID's SecretService subclass.
GType dids_service_get_type(void);

/// How many prompts of `service` (a dids_service instance) expired at their deadline.
unsigned int dids_service_expired_prompts(void *service);

/// Whether a prompt still open at the deadline is dismissed (default 1). The Swift caller decides
/// (SecretServiceWire.mayDismissPrompts: gnome-keyring aborts when its unlock prompt is dismissed).
void dids_service_set_may_dismiss(void *service, int may_dismiss);

#endif
