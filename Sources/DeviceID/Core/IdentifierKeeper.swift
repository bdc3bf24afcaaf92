import CDeviceIDLibc

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
/// 4. Nothing silent: when the keyring was there but refused or failed a write (of a new ID, or of
///    a repair), the answer carries that failure (`Resolution.keyringFailure`); the next call
///    tries again. A keyring item in 0.1.0's form is rewritten in the current one.
/// 5. Mirror-first (auto, `Stores.mirrorFirst`): a mirror record whose `confirmed` time says the
///    keyring held the same ID less than the re-check interval ago answers alone, without D-Bus.
///    Whenever the keyring is seen holding the ID (found equal, written, repaired), the mirror's
///    copy is written with a new `confirmed` time; a mirror written while the keyring was not
///    there, or refused, carries none. So the keyring is asked when there is no such record, when
///    it is older than the interval (or from the future: the clock went back), on reset, and on
///    every write; what an outside actor changed in either store is noticed then and reconciled
///    by rules 1–3.
struct IdentifierKeeper {
    let stores: Stores

    enum Target { case keyring, file }

    struct Sighting {
        var keyring: Stores.Answer<IdentifierRecord>
        var file: Stores.Answer<IdentifierRecord>
        /// The keyring's copy is in 0.1.0's form.
        var keyringIsLegacy = false
    }

    /// Where an answer came from.
    enum Origin { case keyring, file, created }

    /// What `resolve` found or made.
    struct Resolution {
        var record: IdentifierRecord
        var source: Origin
        /// Why the keyring does not hold the ID although it answered: it refused or failed the write.
        var keyringFailure: DeviceIDError?
        /// A store held a corrupt copy, which was replaced with the other store's valid one.
        var repairedCorrupt = false
        /// Answered by the mirror for the keyring that confirmed it (rule 5); D-Bus not used.
        var fromMirror = false
    }

    enum Decision {
        case use(IdentifierRecord, Origin, repair: [Target])
        case fail(DeviceIDError)
        case mint(into: [Target])
    }

    func look(_ key: StoreKey) -> Sighting {
        guard stores.keyring != nil, stores.file != nil else {
            let (keyring, legacy) = askKeyring(key)
            return Sighting(keyring: keyring, file: askFile(key), keyringIsLegacy: legacy)
        }
        // Both stores: the file (and OpenSSL's first use, and the machine ID) while D-Bus answers.
        let stores = self.stores
        let ((keyring, legacy), file) = Concurrently.run({ askKeyring(key) }, side: { () -> Stores.Answer<IdentifierRecord> in
            _ = try? MachineID.raw()
            return IdentifierKeeper(stores: stores).askFile(key)
        })
        return Sighting(keyring: keyring, file: file, keyringIsLegacy: legacy)
    }

    /// The keyring's record (the preferred one of several copies), and whether it is in 0.1.0's form.
    private func askKeyring(_ key: StoreKey) -> (Stores.Answer<IdentifierRecord>, Bool) {
        var legacy = false
        let answer = stores.ask(keyring: { (store) throws(DeviceIDError) -> IdentifierRecord? in
            var best: IdentifierRecord?
            var firstError: DeviceIDError?
            for item in try store.items(key) {
                do throws(DeviceIDError) {
                    let (record, isLegacy) = try IdentifierRecord.fromKeyring(secret: item.secret, attributes: item.attributes)
                    legacy = legacy || isLegacy
                    best = best.map { $0.preferred(over: record) } ?? record
                } catch {
                    firstError = firstError ?? DeviceIDError(.corrupt, "keyring item: \(error.detail)")
                }
            }
            if let best { return best }
            if let firstError { throw firstError }
            return nil
        })
        return (answer, legacy)
    }

    private func askFile(_ key: StoreKey) -> Stores.Answer<IdentifierRecord> {
        stores.ask(file: { (store) throws(DeviceIDError) -> IdentifierRecord? in
            guard let bytes = try store.read(key) else { return nil }
            return try IdentifierRecord(parsing: bytes)
        })
    }

    func decide(_ s: Sighting, now: UInt64) -> Decision {
        let rewrite: [Target] = s.keyringIsLegacy ? [.keyring] : []
        // The mirror is written again, with the time, once the keyring holds its ID (rule 5).
        let confirm: [Target] = stores.mirrorFirst ? [.file] : []
        switch (s.keyring.value, s.file.value) {
        case let (k?, f?):
            if k.id == f.id { return .use(k, .keyring, repair: rewrite + (isConfirmed(f, now) ? [] : confirm)) }
            let winner = k.preferred(over: f)
            return winner == k ? .use(k, .keyring, repair: rewrite + [.file]) : .use(f, .file, repair: [.keyring] + confirm)
        case let (k?, nil):
            return .use(k, .keyring, repair: rewrite + (Self.receives(s.file) ? [.file] : []))
        case let (nil, f?):
            return .use(f, .file, repair: Self.receives(s.keyring) ? [.keyring] + confirm : [])
        case (nil, nil):
            if let error = s.keyring.failure ?? s.file.failure { return .fail(error) }
            var targets = [Target]()
            if s.keyring.answered { targets.append(.keyring) }
            if s.file.answered { targets.append(.file) }
            guard !targets.isEmpty else {
                if case .unreachable(let error) = s.keyring { return .fail(error) }
                return .fail(DeviceIDError(.unavailable, "no store is available"))
            }
            return .mint(into: targets)
        }
    }

    /// A store that said "none", or holds a corrupt copy, takes the other store's valid record.
    private static func receives(_ answer: Stores.Answer<IdentifierRecord>) -> Bool {
        switch answer {
        case .empty: return true
        case .failed(let error) where error.code == .corrupt: return true
        default: return false
        }
    }

    /// Whether the mirror's copy was confirmed by the keyring within the re-check interval.
    private func isConfirmed(_ mirror: IdentifierRecord, _ now: UInt64) -> Bool {
        guard stores.mirrorFirst, let confirmed = mirror.confirmed else { return false }
        return confirmed <= now && now - confirmed < stores.mirrorRecheckSeconds
    }

    /// Rule 5: the mirror's record, when it answers alone.
    private func confirmedMirror(_ key: StoreKey, _ now: UInt64) -> Resolution? {
        guard stores.mirrorFirst, case .found(let record) = askFile(key), isConfirmed(record, now) else { return nil }
        return Resolution(record: record, source: .keyring, fromMirror: true)
    }

    private static func now() -> UInt64 { UInt64(max(0, time(nil))) }

    /// The identifier for `key`, minting one if and only if every store said "none".
    func resolve(_ key: StoreKey, fingerprint: () -> [UInt8]?) throws(DeviceIDError) -> Resolution {
        let now = Self.now()
        if let mirrored = confirmedMirror(key, now) { return mirrored }
        switch decide(look(key), now: now) {
        case .use(let record, let source, let repair) where repair.isEmpty:
            return Resolution(record: record, source: source)
        case .fail(let error):
            throw error
        default:
            break
        }
        return try stores.lock.withLock { () throws(DeviceIDError) -> Resolution in
            let sighting = look(key)
            let now = Self.now()
            switch decide(sighting, now: now) {
            case .use(let record, let source, let repair):
                // The answer stands even if a copy cannot be written now; a keyring that refused
                // is reported with it, and so is a corrupt copy that was replaced.
                var resolution = Resolution(record: record, source: source)
                var keyringHolds = sighting.keyring.value?.id == record.id && !sighting.keyringIsLegacy
                for target in Self.keyringFirst(repair) {
                    do throws(DeviceIDError) {
                        try write(record, key, to: target, confirmedAt: keyringHolds ? now : nil)
                        if target == .keyring { keyringHolds = true }
                        let answer = target == .keyring ? sighting.keyring : sighting.file
                        if case .failed(let error) = answer, error.code == .corrupt { resolution.repairedCorrupt = true }
                    } catch where target == .keyring {
                        resolution.keyringFailure = error
                    } catch {}
                }
                return resolution
            case .fail(let error):
                throw error
            case .mint(let targets):
                let record = IdentifierRecord(id: try ID128.random(), created: UInt64(max(0, time(nil))),
                                              machine: fingerprint())
                var resolution = Resolution(record: record, source: .created)
                var firstError: DeviceIDError?
                var written = 0
                var keyringHolds = false
                for target in Self.keyringFirst(targets) {
                    do throws(DeviceIDError) {
                        try write(record, key, to: target, confirmedAt: keyringHolds && stores.mirrorFirst ? now : nil)
                        if target == .keyring { keyringHolds = true }
                        written += 1
                    } catch {
                        firstError = firstError ?? error
                        if target == .keyring { resolution.keyringFailure = error }
                    }
                }
                if written == 0, let firstError { throw firstError }
                return resolution
            }
        }
    }

    /// Removes the identifier from every store. A locked keyring fails the reset before anything
    /// is removed, so the ID cannot come back from a store that kept it.
    func reset(_ key: StoreKey) throws(DeviceIDError) {
        try stores.lock.withLock { () throws(DeviceIDError) in
            try stores.withKeyring { (keyring) throws(DeviceIDError) in try keyring.delete(key) }
            try stores.file?.delete(key)
        }
    }

    /// The keyring is written before the mirror, so that the mirror's copy can say the keyring holds it.
    private static func keyringFirst(_ targets: [Target]) -> [Target] {
        (targets.contains(.keyring) ? [.keyring] : []) + (targets.contains(.file) ? [.file] : [])
    }

    /// `confirmedAt`: the keyring holds this ID, as of then (rule 5); nil writes no confirmation.
    private func write(_ record: IdentifierRecord, _ key: StoreKey, to target: Target,
                       confirmedAt: UInt64?) throws(DeviceIDError) {
        switch target {
        case .keyring: try stores.keyring?.write(key, record.keyringSecret, extra: record.keyringAttributes)
        case .file:
            var copy = record
            copy.confirmed = stores.mirrorFirst ? confirmedAt : nil
            try stores.file?.write(key, copy.serialized())
        }
    }
}
