/// On/off settings (advertising "limit tracking", OpenUDID opt-outs), kept like identifiers: in
/// the keyring and mirrored in the file store, under the reserved service `deviceid.setting`.
///
/// docs/STATE.md, "Settings": each copy carries a hybrid logical clock; the copy with the later
/// clock wins (equal clocks: on — privacy first), and a store holding an older copy receives the
/// newer. A change reaches every store that may hold settings or fails, writing nothing. A setting
/// that cannot be read (a keyring that may hold it is silent, no mirror) is an error, never "off":
/// an opt-out must not be forgotten because a store was silent.
struct SettingKeeper {
    let stores: Stores

    /// One stored copy.
    struct Value: Equatable {
        var on: Bool
        /// Milliseconds-based hybrid logical clock; 0 for copies 0.1.0 and 0.2.0 wrote.
        var clock: UInt64

        /// Whether this copy wins over `other`.
        func wins(over other: Value) -> Bool {
            clock != other.clock ? clock > other.clock : (on && !other.on)
        }

        /// `on\n` or `off\n` (0.2.0's form, clock 0), then `clock=N\n`.
        var bytes: [UInt8] {
            Array(((on ? "on\n" : "off\n") + (clock > 0 ? "clock=\(clock)\n" : "")).utf8)
        }

        init(on: Bool, clock: UInt64) {
            self.on = on
            self.clock = clock
        }

        init(parsing bytes: [UInt8]) throws(DeviceIDError) {
            let text = String(decoding: bytes, as: UTF8.self)
            var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            guard bytes.last == UInt8(ascii: "\n"), text.utf8.elementsEqual(bytes) else {
                throw DeviceIDError(.corrupt, "a stored setting is neither on nor off")
            }
            lines.removeLast()
            switch lines.first {
            case "on": on = true
            case "off": on = false
            default: throw DeviceIDError(.corrupt, "a stored setting is neither on nor off")
            }
            clock = 0
            if lines.count == 2, lines[1].hasPrefix("clock=") {
                let digits = lines[1].dropFirst("clock=".count)
                guard !digits.isEmpty, digits.utf8.count <= 20, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                      let n = UInt64(String(digits)), n < IdentifierRecord.generationLimit else {
                    throw DeviceIDError(.corrupt, "a stored setting has a malformed clock")
                }
                clock = n
            } else if lines.count != 1 {
                throw DeviceIDError(.corrupt, "a stored setting is neither on nor off")
            }
        }
    }

    private static func key(_ name: String) -> StoreKey {
        StoreKey.setting(name)
    }

    private static func read(_ store: SecretServiceStore, _ key: StoreKey) throws(DeviceIDError) -> Value? {
        try readAll(store, key)
    }

    private func askFile(_ key: StoreKey) -> Stores.Answer<Value> {
        askFileOrLegacy(key).answer
    }

    /// The file store's copy; when it has none, root's legacy store's (`fromLegacy` says so).
    private func askFileOrLegacy(_ key: StoreKey) -> (answer: Stores.Answer<Value>, fromLegacy: Bool) {
        let parse = { (s: FileStore) throws(DeviceIDError) -> Value? in
            try s.read(key).map { (b) throws(DeviceIDError) in try Value(parsing: b) }
        }
        let answer = stores.ask(file: parse)
        guard case .empty = answer, let legacy = stores.legacy else { return (answer, false) }
        do {
            guard let value = try parse(legacy) else { return (answer, false) }
            return (.found(value), true)
        } catch {
            return (.failed(error), false)
        }
    }

    /// Every keyring copy (a write's clean-up may have been interrupted): the one that wins.
    private static func readAll(_ store: SecretServiceStore, _ key: StoreKey) throws(DeviceIDError) -> Value? {
        var best: Value?
        for item in try store.items(key) {
            let value = try Value(parsing: item.secret)
            if best.map({ value.wins(over: $0) }) ?? true { best = value }
        }
        return best
    }

    func read(_ name: String) throws(DeviceIDError) -> Bool {
        let key = Self.key(name)
        let keyring = stores.ask(keyring: { (s) throws(DeviceIDError) -> Value? in try Self.read(s, key) })
        let (file, fromLegacy) = askFileOrLegacy(key)
        if fromLegacy, let value = file.value { propagate(key, value, to: .file) }
        switch (keyring.value, file.value) {
        case let (k?, f?):
            if k != f { propagate(key, k.wins(over: f) ? k : f, to: k.wins(over: f) ? .file : .keyring) }
            return (k.wins(over: f) ? k : f).on
        case let (k?, nil):
            if file.answered { propagate(key, k, to: .file) }
            return k.on
        case let (nil, f?):
            if keyring.answered { propagate(key, f, to: .keyring) }
            return f.on
        case (nil, nil):
            if let error = keyring.failure ?? file.failure { throw error }
            guard keyring.answered || file.answered else {
                throw DeviceIDError(.unavailable, "no store is available")
            }
            if case .notConfigured = keyring, stores.keyringInUse() {
                throw DeviceIDError(.unavailable, "this user keeps settings in a keyring (so says \(stores.lock.path)), "
                                    + "which the file backend does not ask, and the file store has no copy of this one")
            }
            return false
        }
    }

    private enum Target { case keyring, file }

    /// A store that answered with an older copy, or none, receives the newer; best effort (the next
    /// read tries again), under the lock so that it never overwrites a change made meanwhile.
    private func propagate(_ key: StoreKey, _ value: Value, to target: Target) {
        _ = try? stores.withLocks { () throws(DeviceIDError) in
            switch target {
            case .file:
                guard let file = stores.file else { return }
                if let current = try file.read(key).map({ (b) throws(DeviceIDError) in try Value(parsing: b) }),
                   current == value || current.wins(over: value) { return }
                try file.write(key, value.bytes)
            case .keyring:
                guard let keyring = stores.keyring else { return }
                if let current = try Self.read(keyring, key), current == value || current.wins(over: value) { return }
                try keyring.write(key, value.bytes)
                stores.markKeyringInUse()
            }
        }
    }

    /// Writes the setting to every store that may hold settings, with a clock later than every
    /// copy seen; a store that may hold one and cannot answer fails the call before anything is written.
    func write(_ name: String, _ on: Bool) throws(DeviceIDError) {
        let key = Self.key(name)
        try stores.withLocks { () throws(DeviceIDError) in
            let reach = stores.askKeyringForChange { (s) throws(DeviceIDError) -> Value? in try Self.read(s, key) }
            let file = askFile(key)
            for answer in [reach?.answer ?? .notConfigured, file] {
                if let error = answer.failure, error.code != .corrupt { throw error }
            }
            let seen = max(reach?.answer.value?.clock ?? 0, file.value?.clock ?? 0)
            let value = Value(on: on, clock: max(WallClock.milliseconds(), seen + 1))
            // The file's copy is staged first and put in place last: a keyring that refuses
            // leaves everything as it was.
            let staged = try stores.file?.stage(key, value.bytes)
            var wrote = false
            if let reach, reach.answer.answered || reach.answer.failure != nil {
                try reach.store.write(key, value.bytes)
                stores.markKeyringInUse()
                wrote = true
            }
            if let staged {
                try staged.commit()
                wrote = true
            }
            if !wrote { throw DeviceIDError(.unavailable, "no store is available") }
        }
    }
}
