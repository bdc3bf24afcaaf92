import DeviceID

/// How the app prints an answer (a second file in the module, as apps have).
enum Report {
    static func line(for id: StableID) -> String { id.uuidString }

    /// The blocking call, from synchronous code (in async code it is refused: Habit/main.swift).
    static func blockingID() throws -> StableID { try DeviceIdentity.shared.stableID(for: Settings.appID) }
}
