import DeviceID
print(try DeviceIdentity.shared.stableID(for: CommandLine.arguments[1]).uuidString)
