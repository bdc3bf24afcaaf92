/// The stores a configuration puts to work, and how much each one's silence means.
struct Stores: Sendable {
    /// Which stores take part (the API's `Configuration.Backend` maps onto this).
    enum Selection: Sendable {
        case keyringAndFile, keyringOnly, fileOnly
    }

    /// The keyring, unless the file backend was chosen (`reaching` adds the one a change must reach).
    private(set) var keyring: SecretServiceStore?
    /// The file store, unless the secret-service backend was chosen.
    let file: FileStore?
    /// True when the keyring was chosen explicitly, so that its absence is an error.
    let keyringRequired: Bool
    /// Holds the cross-process lock (`FileStore.withLock`, in the file store's directory), which
    /// every backend takes to mint, reset or write a setting — the keyring-only one too.
    let lock: FileStore
    /// How long a mirror record confirmed by the keyring answers without D-Bus; 0: never.
    let mirrorRecheckSeconds: UInt64
    /// What records and secrets written get (docs/STATE.md, "Protection classes"); the API's
    /// `Configuration.Protection` maps onto this, this-device-only+pcr7 as `.thisDeviceOnly` with
    /// a binding to PCR 7 (`MachineBinding.pcr7`).
    enum Protection: Sendable {
        case portable, thisDeviceOnly
    }

    let protection: Protection
    /// The TPM that seals and opens this-device-only records and secrets, within the deadline.
    let binding: MachineBinding
    /// The re-check interval unless configured (docs/STATE.md, rule 5): a day.
    static let defaultMirrorRecheckSeconds: UInt32 = 86_400

    /// Whether the file mirror may answer for the keyring (both stores, a re-check interval).
    var mirrorFirst: Bool { keyring != nil && file != nil && mirrorRecheckSeconds > 0 }

    /// The Secret Service of this configuration's deadline, whether or not the backend selects it:
    /// a reset through the file backend reaches it when the file store says the user keeps IDs there.
    let knownKeyring: SecretServiceStore
    /// Root's store of 0.1.0 and 0.2.0 (`~root/.local/share/deviceid`), read only, when the
    /// default directory is root's machine-wide one (docs/STATE.md, "Stores").
    let legacy: FileStore?

    /// `storeDirectory` nil: the default (`StoreDirectory.defaultLocation`).
    /// `timeoutMilliseconds`, `promptMilliseconds`: the keyring's bounds (`SecretServiceStore`).
    init(_ selection: Selection, timeoutMilliseconds: UInt32, promptMilliseconds: UInt32? = nil, storeDirectory: String?,
         mirrorRecheckSeconds: UInt32 = Stores.defaultMirrorRecheckSeconds,
         protection: Protection = .portable, pcr7: Bool = false) throws(DeviceIDError) {
        self.mirrorRecheckSeconds = UInt64(mirrorRecheckSeconds)
        self.protection = protection
        binding = MachineBinding(milliseconds: timeoutMilliseconds, pcr7: pcr7)
        let directory: String
        if let chosen = storeDirectory {
            directory = chosen
            legacy = nil
        } else {
            let location = try StoreDirectory.defaultLocation()
            directory = location.path
            legacy = location.legacy.map { FileStore(path: $0) }
        }
        let fileStore = FileStore(path: directory)
        let keyringStore = SecretServiceStore(timeoutMilliseconds: timeoutMilliseconds, promptMilliseconds: promptMilliseconds)
        knownKeyring = keyringStore
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

    /// The one rule for an unreachable Secret Service (docs/STATE.md, "How each store answers"):
    /// it is "not there" — nothing to read, write or delete — only in `auto`, only when the
    /// failure positively says no Secret Service is there, or that the one there has no default
    /// collection (no keyring, database or wallet open: it can keep nothing of ours now), and only
    /// when the file store does not know that this user keeps IDs in a keyring. Anything else is a
    /// failure: a store that may hold the ID and cannot answer.
    private func classify(_ error: DeviceIDError) -> DeviceIDError? {
        guard !keyringRequired else { return error }
        let absent = error.code == .unavailable && error.keyringAbsent
        guard absent || error.code == .noCollection else { return error }
        guard keyringInUse() else { return nil }
        if !absent {
            return DeviceIDError(.noCollection, "this user keeps IDs in a keyring (so says \(lock.path)), and "
                                 + "none is open as the default collection now: \(error.detail)")
        }
        return DeviceIDError(.unavailable, "this user keeps IDs in a keyring (so says \(lock.path)), which "
                             + "cannot be reached from here: \(error.detail); run this where the keyring is "
                             + "reachable (the desktop session), or choose the file backend explicitly")
    }

    /// Whether the file store says this user keeps IDs in a keyring: its marker (written whenever the
    /// keyring is seen holding something written through it), or — a 0.2.0 store, which has none —
    /// any record the keyring confirmed (root's legacy store included). That scan is made once:
    /// its answer is written as the marker, `1` or `0`, and `markKeyringInUse` turns a `0` into `1`.
    /// A corrupt marker says yes. A file store that cannot be read at all says no here: its own
    /// failure stops whatever asked (nothing is minted or changed over a store that cannot
    /// answer), and is the error to report.
    func keyringInUse() -> Bool {
        do {
            if let marker = try lock.read(Self.keyringMarker) { return marker != Self.noKeyringYet }
        } catch {
            return error.code == .corrupt
        }
        let confirmed = { (value: [UInt8]) -> Bool in String(decoding: value, as: UTF8.self).includes("\nconfirmed=") }
        let none: (found: Bool, scanned: Int) = (false, 0)
        let here = (try? lock.anyIdentifierValue(where: confirmed)) ?? none
        let old = (try? legacy?.anyIdentifierValue(where: confirmed)) ?? none
        let found = here.found || old.found
        if found || here.scanned + old.scanned > 0 {
            _ = try? lock.write(Self.keyringMarker, found ? Self.keyringSeen : Self.noKeyringYet)
        }
        return found
    }

    /// Records that the keyring holds something written through this file store; best effort (the
    /// marker only ever makes a later failure more careful).
    func markKeyringInUse() {
        do {
            if try lock.read(Self.keyringMarker) != Self.keyringSeen { try lock.write(Self.keyringMarker, Self.keyringSeen) }
        } catch {}
    }

    private static let keyringSeen = Array("1\n".utf8)
    private static let noKeyringYet = Array("0\n".utf8)

    static let keyringMarker = StoreKey.state("keyring-in-use")

    /// Asks the keyring, classifying "not there" apart from "there but silent" (`classify`).
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

    /// Runs `body` holding the store directory's lock and then the user's `SessionLock`: what every
    /// mint, repair, reset and setting change takes.
    func withLocks<T>(_ body: () throws(DeviceIDError) -> T) throws(DeviceIDError) -> T {
        let locked = { () throws(DeviceIDError) -> T in
            try SessionLock.withLock(waitingAtMost: self.knownKeyring.patienceMilliseconds) { () throws(DeviceIDError) -> T in
                try body()
            }
        }
        // The secret-service backend keeps nothing in the directory: a read-only or foreign one
        // must not fail it, and the session lock serializes the keyring's users.
        return file == nil ? try lock.withLockWherePossible(locked) : try lock.withLock(locked)
    }

    /// These stores with `store` — the keyring `askKeyringForChange` reached through the file
    /// backend — among them: what a change is decided over and written to (docs/STATE.md,
    /// "Protection classes": a seal in place is a change).
    func reaching(_ store: SecretServiceStore) -> Stores {
        var wider = self
        wider.keyring = store
        return wider
    }

    /// Asks the keyring that a change (a reset, a setting, a seal in place) must reach
    /// (docs/STATE.md): the selected one, classified as `ask(keyring:)` does; with the file
    /// backend, the user's keyring when the file store says IDs are kept there — then any failure
    /// is one. nil: no keyring to reach.
    func askKeyringForChange<Value>(_ body: (SecretServiceStore) throws(DeviceIDError) -> Value?)
        -> (store: SecretServiceStore, answer: Answer<Value>)? {
        if let keyring { return (keyring, ask(keyring: body)) }
        guard file != nil, keyringInUse() else { return nil }
        do {
            if let value = try body(knownKeyring) { return (knownKeyring, .found(value)) }
            return (knownKeyring, .empty)
        } catch {
            return (knownKeyring, .failed(DeviceIDError(error.code, "this user keeps IDs in a keyring (so says "
                + "\(lock.path)), which a change must reach: \(error.detail)")))
        }
    }
}
