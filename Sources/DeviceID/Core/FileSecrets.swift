/// The caller's secrets in the file store: sealed (`Sealing`) with the sandbox's key where a
/// Secret portal anchors the app (`SandboxAnchor`), so that nothing of them is on disk in plain;
/// plain, in a private directory, only where `SecretKeeper` allows it (the file backend chosen). A
/// sealed secret and a plain one are files of their own (`StoreKey.sealed`): a store never guesses
/// which form a file holds.
struct FileSecrets {
    let file: FileStore
    let timeoutMilliseconds: UInt32

    private func anchor() throws(DeviceIDError) -> SandboxAnchor.Keys? {
        guard case .anchored(let keys)? = try SandboxAnchor.ask(timeoutMilliseconds: timeoutMilliseconds) else { return nil }
        return keys
    }

    /// Stores `secret`, replacing either form: sealed where an anchor answers (a portal that
    /// cannot answer fails the call: nothing is written in plain where it could be sealed); else in
    /// plain, unless `refusingPlaintext` is given, which is then thrown and nothing is written.
    func write(_ key: StoreKey, _ secret: [UInt8], refusingPlaintext: DeviceIDError?) throws(DeviceIDError) -> SecretLocation {
        if let keys = try anchor() {
            try file.write(key.sealed, try Sealing.seal(secret, key: keys.sealing, context: key.sealed.encoded))
            _ = try file.delete(key)
            return .sealedFile(path: try path(key.sealed))
        }
        if let refusingPlaintext { throw refusingPlaintext }
        try file.write(key, secret)
        _ = try file.delete(key.sealed)
        return .plaintextFile(path: try path(key))
    }

    /// The secret in either form and where it was, or nil when the store has neither.
    func read(_ key: StoreKey) throws(DeviceIDError) -> (value: [UInt8], location: SecretLocation)? {
        guard let sealed = try file.read(key.sealed) else {
            guard let plain = try file.read(key) else { return nil }
            return (plain, .plaintextFile(path: try path(key)))
        }
        guard let keys = try anchor() else {
            throw DeviceIDError(.unavailable, "the secret is sealed with this app's key from the Secret portal, "
                                + "and no Secret portal answers here now")
        }
        return (try Sealing.open(sealed, key: keys.sealing, context: key.sealed.encoded), .sealedFile(path: try path(key.sealed)))
    }

    /// Deletes both forms; false when neither was there.
    func delete(_ key: StoreKey) throws(DeviceIDError) -> Bool {
        let sealed = try file.delete(key.sealed)
        let plain = try file.delete(key)
        return sealed || plain
    }

    private func path(_ key: StoreKey) throws(DeviceIDError) -> String {
        file.path + "/" + (try FileStore.fileName(for: key))
    }
}
