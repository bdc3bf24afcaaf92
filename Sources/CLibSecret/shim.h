// The D-Bus-path calls (secret-paths.h) read an item without building a proxy for it: three
// D-Bus messages instead of eight on the first lookup. libsecret marks them "subject to change";
// they have been stable since 0.x and are what secret_password_lookup itself uses.
#define SECRET_API_SUBJECT_TO_CHANGE 1
#include <libsecret/secret.h>
