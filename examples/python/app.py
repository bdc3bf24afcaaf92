"""Prints this device's stable identifier for an app id, and where it came from."""
import sys

import deviceid

app = sys.argv[1] if len(sys.argv) > 1 else "com.example.app"
try:
    info = deviceid.get_info(app)
except deviceid.DeviceIDError as error:
    sys.exit(f"deviceid: {error} ({error.name})")
print(info.id, info.source)
