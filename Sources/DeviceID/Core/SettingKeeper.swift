/// On/off settings (advertising "limit tracking", OpenUDID opt-outs), kept like identifiers: in
/// the keyring and mirrored in the file store, under the reserved service `deviceid.setting`.
///
/// A setting that cannot be read (locked keyring, no mirror) is an error, never "off": an
/// opt-out must not be forgotten because a store was silent.
struct SettingKeeper {
    let stores: Stores

    private static func key(_ name: String) -> StoreKey {
        StoreKey.setting(name)
    }

    private static func parse(_ bytes: [UInt8]) throws(DeviceIDError) -> Bool {
        switch bytes {
        case Array("on\n".utf8): return true
        case Array("off\n".utf8): return false
        default: throw DeviceIDError(.corrupt, "a stored setting is neither on nor off")
        }
    }

    func read(_ name: String) throws(DeviceIDError) -> Bool {
        let key = Self.key(name)
        let keyring = stores.ask(keyring: { (s) throws(DeviceIDError) -> Bool? in
            try s.read(key).map { (b) throws(DeviceIDError) in try Self.parse(b) }
        })
        let file = stores.ask(file: { (s) throws(DeviceIDError) -> Bool? in
            try s.read(key).map { (b) throws(DeviceIDError) in try Self.parse(b) }
        })
        if let value = keyring.value ?? file.value { return value }
        if let error = keyring.failure ?? file.failure { throw error }
        guard keyring.answered || file.answered else {
            throw DeviceIDError(.unavailable, "no store is available")
        }
        return false
    }

    /// Writes the setting to every store that is there; any failure fails the call.
    func write(_ name: String, _ value: Bool) throws(DeviceIDError) {
        let key = Self.key(name)
        let bytes = Array((value ? "on\n" : "off\n").utf8)
        try stores.lock.withLock { () throws(DeviceIDError) in
            var wrote = try stores.withKeyring { (keyring) throws(DeviceIDError) in try keyring.write(key, bytes) }
            if let file = stores.file {
                try file.write(key, bytes)
                wrote = true
            }
            if !wrote { throw DeviceIDError(.unavailable, "no store is available") }
        }
    }
}
