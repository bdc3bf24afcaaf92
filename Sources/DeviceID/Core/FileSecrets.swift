/// The caller's secrets in the file store: sealed (`Sealing`) with the sandbox's key where a
/// Secret portal anchors the app (`SandboxAnchor`), so that nothing of them is on disk in plain;
/// plain, in a private directory, everywhere else (a server, a container, a sandbox whose portal
/// positively has no secret for it). A sealed secret and a plain one are files of their own
/// (`StoreKey.sealed`): a store never guesses which form a file holds.
struct FileSecrets {
    let file: FileStore
    let timeoutMilliseconds: UInt32

    private func anchor() throws(DeviceIDError) -> SandboxAnchor.Keys? {
        guard case .anchored(let keys)? = try SandboxAnchor.ask(timeoutMilliseconds: timeoutMilliseconds) else { return nil }
        return keys
    }

    /// Stores `secret`, replacing either form: sealed where an anchor answers (a portal that
    /// cannot answer fails the call: nothing is written in plain where it could be sealed).
    func write(_ key: StoreKey, _ secret: [UInt8]) throws(DeviceIDError) {
        if let keys = try anchor() {
            try file.write(key.sealed, try Sealing.seal(secret, key: keys.sealing, context: key.sealed.encoded))
            _ = try file.delete(key)
        } else {
            try file.write(key, secret)
            _ = try file.delete(key.sealed)
        }
    }

    /// The secret in either form, or nil when the store has neither.
    func read(_ key: StoreKey) throws(DeviceIDError) -> [UInt8]? {
        guard let sealed = try file.read(key.sealed) else { return try file.read(key) }
        guard let keys = try anchor() else {
            throw DeviceIDError(.unavailable, "the secret is sealed with this app's key from the Secret portal, "
                                + "and no Secret portal answers here now")
        }
        return try Sealing.open(sealed, key: keys.sealing, context: key.sealed.encoded)
    }

    /// Deletes both forms; false when neither was there.
    func delete(_ key: StoreKey) throws(DeviceIDError) -> Bool {
        let sealed = try file.delete(key.sealed)
        let plain = try file.delete(key)
        return sealed || plain
    }
}
