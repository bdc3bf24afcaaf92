#include "CDeviceIDFastPaths.h"

#include <stddef.h>
#include <string.h>

#include "deviceid.h"

void dids_environment_pack(void *out, size_t size, const struct dids_environment_facts *facts, const char *name,
                           const char *store_path, const char *machine_id_reason, const char *portal_detail,
                           const char *binding_detail) {
    deviceid_environment environment;
    memset(&environment, 0, sizeof environment);
    environment.kind = facts->kind;
    environment.portal = facts->portal;
    environment.store_location = facts->store_location;
    environment.stable_id_location = facts->stable_id_location;
    environment.stable_id_survives = facts->stable_id_survives;
    environment.machine_id_weak = facts->machine_id_weak;
    environment.protection = facts->protection;
    environment.binding = facts->binding;
    dids_copy_text(environment.name, sizeof environment.name, name);
    dids_copy_text(environment.store_path, sizeof environment.store_path, store_path);
    dids_copy_text(environment.machine_id_reason, sizeof environment.machine_id_reason, machine_id_reason);
    dids_copy_text(environment.portal_detail, sizeof environment.portal_detail, portal_detail);
    dids_copy_text(environment.binding_detail, sizeof environment.binding_detail, binding_detail);
    // A caller built against 1.0 passes 1.0's size: it gets the fields it knows, whole.
    memcpy(out, &environment, size < sizeof environment ? size : sizeof environment);
}

size_t dids_environment_size(void) { return sizeof(deviceid_environment); }

size_t dids_environment_size_1_0(void) { return offsetof(deviceid_environment, protection); }
