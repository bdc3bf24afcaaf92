/// The keyring backend: items in the Secret Service's default collection, filed under the
/// `service` and `username` attributes so that `secret-tool` and DeviceID read each other's items.
struct SecretServiceStore: Sendable {
    let timeoutMilliseconds: UInt32

    /// Every readable value stored under `key`, most recently modified first. Empty means the
    /// keyring positively has none: a locked match, or a locked default collection (which hides
    /// its items from search), throws `.locked` instead.
    func readAll(_ key: StoreKey) throws(DeviceIDError) -> [[UInt8]] {
        try LibSecret.session(timeoutMilliseconds: timeoutMilliseconds) { session throws(DeviceIDError) in
            // The common case, one unlocked item, by path: no proxy per item.
            let paths = try session.searchPaths(service: key.service, account: key.account)
            if paths.unlocked.count == 1 {
                return [try session.secret(path: paths.unlocked[0])]
            }
            if paths.unlocked.isEmpty {
                if !paths.locked.isEmpty { throw DeviceIDError(.locked, "the matching item is locked") }
                if try session.defaultCollectionState() == .locked {
                    throw DeviceIDError(.locked, "the default collection is locked; its items cannot be searched")
                }
                return []
            }
            // Several copies (several collections): ordered by modification time, newest first.
            let items = try session.search(service: key.service, account: key.account)
            let readable = items.filter { !$0.locked && $0.secret != nil }
                .sorted { ($0.modified, $0.created) > ($1.modified, $1.created) }
            if !readable.isEmpty { return readable.compactMap(\.secret) }
            if items.contains(where: \.locked) {
                throw DeviceIDError(.locked, "the matching item is locked")
            }
            if try session.defaultCollectionState() == .locked {
                throw DeviceIDError(.locked, "the default collection is locked; its items cannot be searched")
            }
            return []
        }
    }

    func read(_ key: StoreKey) throws(DeviceIDError) -> [UInt8]? {
        try readAll(key).first
    }

    func write(_ key: StoreKey, _ value: [UInt8]) throws(DeviceIDError) {
        let label = key.kind == .identifier
            ? "DeviceID \(key.service.dropFirst(StoreKey.reservedPrefix.count)) identifier for \(key.account)"
            : "\(key.service) (\(key.account))"
        try LibSecret.session(timeoutMilliseconds: timeoutMilliseconds) { session throws(DeviceIDError) in
            try session.store(service: key.service, account: key.account, label: label, value: value)
        }
    }

    @discardableResult
    func delete(_ key: StoreKey) throws(DeviceIDError) -> Bool {
        try LibSecret.session(timeoutMilliseconds: timeoutMilliseconds) { session throws(DeviceIDError) in
            try session.delete(service: key.service, account: key.account) > 0
        }
    }

    /// The state of the default collection, for `doctor`.
    func defaultCollectionState() throws(DeviceIDError) -> LibSecret.CollectionState {
        try LibSecret.session(timeoutMilliseconds: timeoutMilliseconds) { session throws(DeviceIDError) in
            try session.defaultCollectionState()
        }
    }
}
