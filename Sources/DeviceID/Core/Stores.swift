/// The stores a configuration puts to work, and how much each one's silence means.
struct Stores: Sendable {
    /// Which stores take part (the API's `Configuration.Backend` maps onto this).
    enum Selection: Sendable {
        case keyringAndFile, keyringOnly, fileOnly
    }

    /// The keyring, unless the file backend was chosen.
    let keyring: SecretServiceStore?
    /// The file store, unless the secret-service backend was chosen.
    let file: FileStore?
    /// True when the keyring was chosen explicitly, so that its absence is an error.
    let keyringRequired: Bool
    /// Holds the cross-process lock (`FileStore.withLock`, in the file store's directory), which
    /// every backend takes to mint, reset or write a setting — the keyring-only one too.
    let lock: FileStore
    /// How long a mirror record confirmed by the keyring answers without D-Bus; 0: never.
    let mirrorRecheckSeconds: UInt64

    /// Whether the file mirror may answer for the keyring (both stores, a re-check interval).
    var mirrorFirst: Bool { keyring != nil && file != nil && mirrorRecheckSeconds > 0 }

    /// `storeDirectory` nil: the default (`StoreDirectory.defaultPath`).
    init(_ selection: Selection, deadline: LibSecret.Deadline, storeDirectory: String?,
         mirrorRecheckSeconds: UInt32 = Configuration.defaultMirrorRecheckSeconds) throws(DeviceIDError) {
        self.mirrorRecheckSeconds = UInt64(mirrorRecheckSeconds)
        let directory: String
        if let chosen = storeDirectory {
            directory = chosen
        } else {
            directory = try StoreDirectory.defaultPath()
        }
        let fileStore = FileStore(path: directory)
        let keyringStore = SecretServiceStore(deadline: deadline)
        switch selection {
        case .keyringAndFile:
            keyring = keyringStore
            file = fileStore
            keyringRequired = false
        case .keyringOnly:
            keyring = keyringStore
            file = nil
            keyringRequired = true
        case .fileOnly:
            keyring = nil
            file = fileStore
            keyringRequired = false
        }
        lock = fileStore
    }

    /// What one store said when asked for an item — the distinction that keeps a silent store
    /// from being read as "none" and an ID from being minted over one that exists.
    enum Answer<Value> {
        case found(Value)
        /// The store was asked and positively has none.
        case empty
        /// The store is not configured for this backend: it was not asked.
        case notConfigured
        /// The keyring is not there (auto mode, no Secret Service): it neither has nor lacks anything.
        case unreachable(DeviceIDError)
        /// The store is there but could not answer (locked, timed out, corrupt, I/O…).
        case failed(DeviceIDError)

        var value: Value? {
            if case .found(let v) = self { return v }
            return nil
        }

        var failure: DeviceIDError? {
            if case .failed(let e) = self { return e }
            return nil
        }

        /// Whether the store answered at all (found, or positively empty).
        var answered: Bool {
            switch self {
            case .found, .empty: true
            case .notConfigured, .unreachable, .failed: false
            }
        }
    }

    /// The one rule for an unreachable Secret Service: in auto mode it is "not there" — nothing
    /// to read, write or delete — and an error only when the keyring was chosen explicitly.
    private func classify(_ error: DeviceIDError) -> DeviceIDError? {
        error.code == .unavailable && !keyringRequired ? nil : error
    }

    /// Asks the keyring, classifying "not there" apart from "there but silent". A Secret Service
    /// without a default collection is there: it may hold the ID where nothing can be read now.
    func ask<Value>(keyring body: (SecretServiceStore) throws(DeviceIDError) -> Value?) -> Answer<Value> {
        Self.ask(keyring, body, classify)
    }

    func ask<Value>(file body: (FileStore) throws(DeviceIDError) -> Value?) -> Answer<Value> {
        Self.ask(file, body) { $0 }
    }

    /// `classify` says which errors are failures; the others mean the store is unreachable.
    private static func ask<Store, Value>(_ store: Store?, _ body: (Store) throws(DeviceIDError) -> Value?,
                                          _ classify: (DeviceIDError) -> DeviceIDError?) -> Answer<Value> {
        guard let store else { return .notConfigured }
        do {
            if let value = try body(store) { return .found(value) }
            return .empty
        } catch {
            guard let failure = classify(error) else { return .unreachable(error) }
            return .failed(failure)
        }
    }

    /// Runs `body` against the keyring where it is there (see `classify`); returns whether it ran.
    @discardableResult
    func withKeyring(_ body: (SecretServiceStore) throws(DeviceIDError) -> Void) throws(DeviceIDError) -> Bool {
        guard let keyring else { return false }
        do {
            try body(keyring)
            return true
        } catch {
            guard let failure = classify(error) else { return false }
            throw failure
        }
    }
}
