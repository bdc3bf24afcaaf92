import DeviceID

let id = try DeviceIdentity.shared.stableID(for: "com.example.consumer")
let again = try await DeviceIdentity.shared.nonblocking.stableID(for: "com.example.consumer")
precondition(id.id == again.id)
print(id.uuidString)
