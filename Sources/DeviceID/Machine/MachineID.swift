/// The machine's identity (`/etc/machine-id`), and identifiers derived from it exactly as
/// systemd's `sd_id128_get_machine_app_specific` does. The raw machine ID is a system-wide
/// secret-ish value (systemd asks that it never be exposed on the network): only `raw()` — whose
/// name says so — returns it.
public enum MachineID {
    /// Where the machine ID is read from, in order, unless `DEVICEID_MACHINE_ID_PATH` names a file.
    public static let defaultPaths = ["/etc/machine-id", "/var/lib/dbus/machine-id"]

    private static let cache = Locked<[String: ID128]>([:])
    private static var machineIDRemedy: Words { "name a file whose path is UTF-8 in \(Environment.machineIDPath)" }

    /// The raw machine ID. Cached per path: it does not change while the system runs.
    public static func raw() throws(DeviceIDError) -> ID128 {
        if let path = try Environment.path(Environment.machineIDPath, remedy: machineIDRemedy) { return try raw(path: path) }
        var firstError: DeviceIDError?
        for path in defaultPaths {
            do throws(DeviceIDError) {
                return try raw(path: path)
            } catch where error.code == .notFound {
                firstError = firstError ?? error
            }
        }
        throw firstError ?? DeviceIDError(.notFound, "no machine ID")
    }

    /// The file `raw()` reads the machine ID from, or nil when none holds one.
    static func pathInUse() -> String? {
        do throws(DeviceIDError) {
            if let path = try Environment.path(Environment.machineIDPath, remedy: machineIDRemedy) {
                return (try? raw(path: path)) == nil ? nil : path
            }
        } catch {
            return nil  // named, but not UTF-8: raw() refuses it, so none is in use
        }
        return defaultPaths.first { (try? raw(path: $0)) != nil }
    }

    /// The machine ID in `path`.
    public static func raw(path: String) throws(DeviceIDError) -> ID128 {
        if let cached = cache.withLock({ $0[path] }) { return cached }
        let id = try parse(try SystemFile.read(path, limit: 64), path: path)
        Redaction.register([id.format(uppercase: false, dashes: false), id.format(uppercase: true, dashes: false),
                            id.uuidString, id.format(uppercase: true, dashes: true)])
        cache.withLock { $0[path] = id }
        return id
    }

    /// machine-id(5): 32 hexadecimal digits and a newline. Empty, all-zero ("not yet initialized"),
    /// "uninitialized" and anything else are refused with `.invalidMachineID`.
    package static func parse(_ bytes: [UInt8], path: String) throws(DeviceIDError) -> ID128 {
        var content = bytes[...]
        if content.last == UInt8(ascii: "\n") { content = content.dropLast() }
        guard !content.isEmpty else { throw DeviceIDError(.invalidMachineID, "\(path) is empty") }
        guard content.count == 32, let raw = Hex.decode(content), let id = ID128(bytes: raw) else {
            throw DeviceIDError(.invalidMachineID, "\(path) does not hold 32 hexadecimal digits")
        }
        guard !id.isNull else { throw DeviceIDError(.invalidMachineID, "\(path) is all zeros (not initialized)") }
        return id
    }

    /// `sd_id128_get_machine_app_specific`: HMAC-SHA256 keyed with the 16 bytes of the machine ID
    /// over the 16 bytes of the app ID; the first 16 bytes, made a version-4 RFC 9562 UUID.
    /// Unlinkable to the machine ID and to other apps' IDs without the machine ID itself.
    public static func appSpecific(_ appID: ID128, machine: ID128? = nil) throws(DeviceIDError) -> ID128 {
        guard !appID.isNull else { throw DeviceIDError(.invalidArgument, "the app ID must not be all zeros") }
        let key: ID128
        if let machine { key = machine } else { key = try raw() }
        let mac = SHA256.hmac(key: key.array, message: appID.array)
        return ID128(bytes: Array(mac.prefix(16)))!.asVersion4()
    }

    /// The app ID for `text`: a UUID (dashed or 32 hex digits, systemd's form) stands for itself;
    /// any other name — "com.example.app" — maps to the first 16 bytes of
    /// SHA-256("deviceid.app-id:" + name). The mapping is fixed: it is part of the output's meaning.
    public static func appID(from text: String) throws(DeviceIDError) -> ID128 {
        if let id = ID128(parsing: text) {
            guard !id.isNull else { throw DeviceIDError(.invalidArgument, "the app ID must not be all zeros") }
            return id
        }
        try Names.validate(text, "app id")
        let digest = SHA256.hash(Array("deviceid.app-id:\(text)".utf8))
        return ID128(bytes: Array(digest.prefix(16)))!
    }

    /// The fingerprint stored with each persisted ID for clone detection: HMAC-SHA256 keyed with
    /// the machine ID over a fixed label, 16 bytes. Never the machine ID itself.
    static func fingerprint() -> [UInt8]? {
        guard let machine = try? raw() else { return nil }
        return Array(SHA256.hmac(key: machine.array, message: Array("deviceid.fingerprint.v1".utf8)).prefix(16))
    }
}

extension MachineID {
    /// Its lazily made locks, made before fork() (`LazyGlobals`).
    static func settleLazyGlobals() { _ = cache }
}
