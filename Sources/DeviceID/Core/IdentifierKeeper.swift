import Glibc

/// Finds, reconciles and — only when every store has positively said "none" — mints one
/// persisted identifier, kept in the keyring and mirrored in the file store.
///
/// The rules, in order:
/// 1. Found anywhere: returned. Copies that disagree converge on the older record
///    (`IdentifierRecord.preferred(over:)`); a store that lacks it, or holds a corrupt copy while
///    the other store holds a valid one, receives it.
/// 2. Not found, and some store could not answer (locked, timed out, corrupt, I/O): that store's
///    error. Nothing is minted: silence is not "none".
/// 3. Every store that is there said "none": under the cross-process lock, look again, then mint
///    and write to each of them. Concurrent first runs, threads or processes, get one ID.
struct IdentifierKeeper {
    let stores: Stores

    enum Target { case keyring, file }

    struct Sighting {
        var keyring: Stores.Answer<IdentifierRecord>?
        var file: Stores.Answer<IdentifierRecord>?
    }

    enum Decision {
        case use(IdentifierRecord, StableID.Source, repair: [Target])
        case fail(DeviceIDError)
        case mint(into: [Target])
    }

    func look(_ key: StoreKey) -> Sighting {
        guard stores.keyring != nil, stores.file != nil else {
            return Sighting(keyring: askKeyring(key), file: askFile(key))
        }
        // Both stores: the file (and OpenSSL's first use, and the machine ID) while D-Bus answers.
        let stores = self.stores
        let (keyring, file) = Concurrently.run({ askKeyring(key) }, side: { () -> Stores.Answer<IdentifierRecord>? in
            _ = try? MachineID.raw()
            return IdentifierKeeper(stores: stores).askFile(key)
        })
        return Sighting(keyring: keyring, file: file)
    }

    private func askKeyring(_ key: StoreKey) -> Stores.Answer<IdentifierRecord>? {
        stores.ask(keyring: { (store) throws(DeviceIDError) -> IdentifierRecord? in
            var best: IdentifierRecord?
            var firstError: DeviceIDError?
            for value in try store.readAll(key) {
                do throws(DeviceIDError) {
                    let record = try IdentifierRecord(parsing: value)
                    best = best.map { $0.preferred(over: record) } ?? record
                } catch {
                    firstError = firstError ?? DeviceIDError(.corrupt, "keyring item: \(error.detail)")
                }
            }
            if let best { return best }
            if let firstError { throw firstError }
            return nil
        })
    }

    private func askFile(_ key: StoreKey) -> Stores.Answer<IdentifierRecord>? {
        stores.ask(file: { (store) throws(DeviceIDError) -> IdentifierRecord? in
            guard let bytes = try store.read(key) else { return nil }
            return try IdentifierRecord(parsing: bytes)
        })
    }

    func decide(_ s: Sighting) -> Decision {
        switch (s.keyring?.value, s.file?.value) {
        case let (k?, f?):
            if k.id == f.id { return .use(k, .keyring, repair: []) }
            let winner = k.preferred(over: f)
            return winner == k ? .use(k, .keyring, repair: [.file]) : .use(f, .file, repair: [.keyring])
        case let (k?, nil):
            return .use(k, .keyring, repair: Self.receives(s.file) ? [.file] : [])
        case let (nil, f?):
            return .use(f, .file, repair: Self.receives(s.keyring) ? [.keyring] : [])
        case (nil, nil):
            if let error = s.keyring?.failure ?? s.file?.failure { return .fail(error) }
            var targets = [Target]()
            if s.keyring?.isPresent == true { targets.append(.keyring) }
            if s.file?.isPresent == true { targets.append(.file) }
            guard !targets.isEmpty else {
                if case .absent(let error)? = s.keyring { return .fail(error) }
                return .fail(DeviceIDError(.unavailable, "no store is available"))
            }
            return .mint(into: targets)
        }
    }

    /// A store that said "none", or holds a corrupt copy, takes the other store's valid record.
    private static func receives(_ answer: Stores.Answer<IdentifierRecord>?) -> Bool {
        switch answer {
        case .none?: return true
        case .failed(let error)? where error.code == .corrupt: return true
        default: return false
        }
    }

    /// The identifier for `key`, minting one if and only if every store said "none".
    func resolve(_ key: StoreKey, fingerprint: () -> [UInt8]?) throws(DeviceIDError) -> (IdentifierRecord, StableID.Source) {
        switch decide(look(key)) {
        case .use(let record, let source, let repair) where repair.isEmpty:
            return (record, source)
        case .fail(let error):
            throw error
        default:
            break
        }
        return try stores.lockDirectory.withLock { () throws(DeviceIDError) -> (IdentifierRecord, StableID.Source) in
            switch decide(look(key)) {
            case .use(let record, let source, let repair):
                // Best effort: the answer stands even if a copy cannot be written now.
                for target in repair { try? write(record, key, to: target) }
                return (record, source)
            case .fail(let error):
                throw error
            case .mint(let targets):
                let record = IdentifierRecord(id: try ID128.random(), created: UInt64(max(0, time(nil))),
                                              machine: fingerprint())
                var firstError: DeviceIDError?
                var written = 0
                for target in targets {
                    do throws(DeviceIDError) {
                        try write(record, key, to: target)
                        written += 1
                    } catch {
                        firstError = firstError ?? error
                    }
                }
                if written == 0, let firstError { throw firstError }
                return (record, .created)
            }
        }
    }

    /// Removes the identifier from every store. A locked keyring fails the reset before anything
    /// is removed, so the ID cannot come back from a store that kept it.
    func reset(_ key: StoreKey) throws(DeviceIDError) {
        try stores.lockDirectory.withLock { () throws(DeviceIDError) in
            if let keyring = stores.keyring {
                do throws(DeviceIDError) {
                    try keyring.delete(key)
                } catch where error.code == .unavailable && !stores.keyringRequired {
                    // No Secret Service here: it holds nothing to remove.
                }
            }
            try stores.file?.delete(key)
        }
    }

    private func write(_ record: IdentifierRecord, _ key: StoreKey, to target: Target) throws(DeviceIDError) {
        switch target {
        case .keyring: try stores.keyring?.write(key, record.serialized())
        case .file: try stores.file?.write(key, record.serialized())
        }
    }
}
