"""The C ABI's numbers the binding passes and reads (include/deviceid.h; test_binding.py compares
every one of them with the header). Not API: Python callers use names ("file", "vendor")."""

BACKEND_NUMBERS = {"auto": 0, "secret-service": 1, "file": 2}
SCOPE_NUMBERS = {"app": 1, "vendor": 2, "advertising": 3, "openudid": 4}
ALGORITHM_NUMBERS = {"md5": 1, "sha256": 2}

FORMAT_UPPERCASE, FORMAT_COMPACT = 1, 2

FLAG_DEVICE_CHANGED, FLAG_WEAK, FLAG_LIMITED, FLAG_FILE_ONLY = 1, 2, 4, 8
FLAG_REPAIRED, FLAG_MIRRORED, FLAG_PROVISIONAL, FLAG_APP_DATA_ONLY = 16, 32, 64, 128

# DEVICEID_SURVIVES_* bits of deviceid_location_survives().
SURVIVES_APP_DATA_REMOVAL, SURVIVES_CONTAINER_REMOVAL = 1, 2
# DEVICEID_MAC_* bits of deviceid_mac_address()'s properties.
MAC_PERMANENT, MAC_WEAK = 1, 2
