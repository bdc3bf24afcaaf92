import DeviceID

/// How the app prints an answer (a second file in the module, as apps have).
enum Report {
    static func line(for id: StableID) -> String { id.uuidString }
}
