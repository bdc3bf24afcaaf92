/// The keyring backend: items in the Secret Service's default collection, filed under the
/// `service` and `username` attributes so that `secret-tool` and DeviceID read each other's items.
struct SecretServiceStore: Sendable {
    let deadline: SecretService.Deadline

    /// Each conversation bounded by `timeoutMilliseconds`; with `promptMilliseconds`, interactive:
    /// a prompt may wait that long for the person (unlock and confirmation dialogs may show).
    init(timeoutMilliseconds: UInt32, promptMilliseconds: UInt32? = nil) {
        deadline = SecretService.Deadline(milliseconds: timeoutMilliseconds, promptMilliseconds: promptMilliseconds)
    }

    /// How long a call waits at most, prompts included.
    var patienceMilliseconds: UInt32 { deadline.session }

    /// One stored item: its secret, and the attributes beyond `service` and `username`.
    struct Item {
        var secret: [UInt8]
        var attributes: [String: String]
    }

    /// Why no session bus would be reached (without autolaunching one), or nil when one may be.
    static func sessionBusProblem() -> String? {
        SessionBus.problem()
    }

    /// The largest secret read or written.
    static let maximumSecretSize = FileEnvelope.maximumSecretSize

    /// Identifier records cross the bus as they are; a caller's secrets encrypted (`Transfer`).
    private static func transfer(_ key: StoreKey) -> SecretService.Transfer {
        key.kind == .identifier ? .plain : .encrypted
    }

    private static func attributes(_ key: StoreKey) -> [(String, String)] {
        [("service", key.service), ("username", key.account)]
    }

    /// Every readable item stored under `key`, most recently modified first. Empty means the
    /// keyring positively has none. The default collection's lock is asked first: locked throws
    /// `.locked` (its items are hidden from search, and KeePassXC's search would wait for an unlock
    /// dialog), missing throws `.noCollection`, and a locked match elsewhere throws `.locked`.
    func items(_ key: StoreKey) throws(DeviceIDError) -> [Item] {
        try SecretService.session(deadline, transfer: Self.transfer(key)) { session throws(DeviceIDError) in
            _ = try session.usableDefaultCollection()
            var attempt = 0
            while true {
                let paths = try session.searchPaths(Self.attributes(key))
                if paths.unlocked.isEmpty {
                    if !paths.locked.isEmpty { throw DeviceIDError(.locked, "the matching item is locked") }
                    return []
                }
                do throws(DeviceIDError) {
                    return try read(paths.unlocked, session)
                } catch where (error.code == .keyring || error.code == .unsupported) && attempt < 2 {
                    // Another process may have deleted or replaced an item between the search and
                    // the read (a reset, a repair; the item's object is then gone: "No such
                    // interface", UnknownMethod, which the error table calls unsupported): look
                    // again. The same items still there means a real failure, never "none".
                    attempt += 1
                    if Set(try session.searchPaths(Self.attributes(key)).unlocked) == Set(paths.unlocked) { throw error }
                }
            }
        }
    }

    private func read(_ paths: [String], _ session: SecretService.Conversation) throws(DeviceIDError) -> [Item] {
        var secrets = try session.secrets(paths, limit: Self.maximumSecretSize)
        var found = [(item: Item, modified: UInt64)]()
        do throws(DeviceIDError) {
            for (index, path) in paths.enumerated() {
                let properties = try session.itemProperties(path)
                found.append((Item(secret: secrets[index], attributes: properties.attributes), properties.modified))
            }
        } catch {
            for index in secrets.indices { wipe(&secrets[index]) }
            throw error
        }
        return found.ordered { $0.modified > $1.modified }.map { $0.item }
    }

    /// The newest item's secret, or nil when there is none. The others' secrets are wiped.
    func read(_ key: StoreKey) throws(DeviceIDError) -> [UInt8]? {
        var found = try items(key)
        guard !found.isEmpty else { return nil }
        let newest = found.removeFirst().secret
        for i in found.indices { wipe(&found[i].secret) }
        return newest
    }

    /// Stores `value` in the default collection with `extra` attributes, replacing what was stored
    /// under `key`: the new item is created first, then every other match is deleted, so that an
    /// interruption leaves an item behind, never none. The clean-up is best effort: once the new
    /// item exists the value is stored, and readers prefer the newest item anyway.
    func write(_ key: StoreKey, _ value: [UInt8], extra: [(String, String)] = []) throws(DeviceIDError) {
        let label = key.kind == .identifier
            ? "DeviceID \(key.service.dropFirst(StoreKey.reservedPrefix.count)) identifier for \(key.account)"
            : "\(key.service) (\(key.account))"
        try SecretService.session(deadline, transfer: Self.transfer(key)) { session throws(DeviceIDError) in
            let collection = try session.usableDefaultCollection()
            let created = try session.createItem(in: collection, label: label,
                                                 attributes: Self.attributes(key) + extra, value: value)
            guard let others = try? session.searchPaths(Self.attributes(key)).unlocked else { return }
            for path in others where path != created { try? session.deleteItem(path) }
        }
    }

    /// Deletes every item stored under `key`; false when there was none. A locked match fails
    /// the call before anything is deleted.
    @discardableResult
    func delete(_ key: StoreKey) throws(DeviceIDError) -> Bool {
        try SecretService.session(deadline, transfer: Self.transfer(key)) { session throws(DeviceIDError) in
            _ = try session.usableDefaultCollection()
            let paths = try session.searchPaths(Self.attributes(key))
            if !paths.locked.isEmpty { throw DeviceIDError(.locked, "a matching item is locked") }
            for path in paths.unlocked {
                do throws(DeviceIDError) {
                    try session.deleteItem(path)
                } catch where error.code == .unsupported {
                    // Another process deleted it between the search and the Delete (the item's
                    // object is gone: UnknownObject, which the error table calls unsupported): it
                    // is deleted. Still there, the failure is real.
                    if try session.searchPaths(Self.attributes(key)).unlocked.contains(path) { throw error }
                }
            }
            return !paths.unlocked.isEmpty
        }
    }

    /// What `doctor` reports of the keyring: who provides it, the default collection, and whether
    /// an item can be created, read back and deleted there.
    struct Probe {
        var provider: String
        var collection: SecretService.CollectionState
        /// nil when the round trip worked.
        var roundTrip: DeviceIDError?
    }

    func probe(_ key: StoreKey, value: [UInt8]) throws(DeviceIDError) -> Probe {
        let (provider, state) = try SecretService.session(deadline, transfer: Self.transfer(key)) { session throws(DeviceIDError) in
            (session.provider(), try session.defaultCollection().state)
        }
        var probe = Probe(provider: provider, collection: state, roundTrip: nil)
        do throws(DeviceIDError) {
            try write(key, value)
            let back = try read(key)
            let deleted = try delete(key)
            if back != value { throw DeviceIDError(.keyring, "the probe item read back differently") }
            let remaining = try read(key)
            if !deleted || remaining != nil { throw DeviceIDError(.keyring, "the probe item was not deleted") }
        } catch {
            _ = try? delete(key)
            probe.roundTrip = error
        }
        return probe
    }
}
