// Prints this device's stable identifier for an app id, and where it came from.
//   swift run deviceid-example com.example.app
import DeviceID
import Glibc

let app = CommandLine.arguments.dropFirst().first ?? "com.example.app"
do {
    let id = try DeviceIdentity.shared.stableID(for: app)
    print(id.uuidString, id.source)
} catch {
    print("deviceid: \(error) (\(error.code.name))")
    exit(1)
}
