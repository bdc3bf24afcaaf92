/// Texts that must never appear in an error DeviceID reports, whoever wrote the message (GLib,
/// libdbus, D-Bus peers): the raw machine ID in each printed form, registered by `MachineID` when
/// it reads it. The gateways pass foreign messages through `redacted(_:)`.
enum Redaction {
    private static let texts = Locked<[String]>([])

    static func register(_ forms: [String]) {
        texts.withLock { list in
            for form in forms where !list.contains(form) { list.append(form) }
        }
    }

    static func redacted(_ text: String) -> String {
        var out = text
        for form in texts.withLock({ $0 }) { out = out.replacingAll(form, with: "[machine-id]") }
        return out
    }
}

extension Redaction {
    /// Its lazily made locks, made before fork() (`LazyGlobals`).
    static func settleLazyGlobals() { _ = texts }
}
