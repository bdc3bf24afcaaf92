// libdbus, the reference D-Bus client: DeviceID's Secret Service client in a process forked from
// one where GLib's D-Bus already ran (see Sources/DeviceID/Gateways/LibDBus.swift).
#include <dbus/dbus.h>
