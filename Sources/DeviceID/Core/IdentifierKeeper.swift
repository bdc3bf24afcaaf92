import CDeviceIDLibc

/// Finds, reconciles and — only when every store that may hold it has positively said "none" —
/// mints one persisted identifier, kept in the keyring and mirrored in the file store. The rules
/// are docs/STATE.md's, which this type implements:
///
/// - a record whose generation is below the highest tombstone seen is dead: never returned or copied;
/// - a live keyring record is the answer, and the mirror receives it (the keyring is the authority);
/// - a keyring that answered without a live record receives the mirror's live one;
/// - a keyring that failed or is absent leaves the mirror's live record to answer, flagged
///   provisional when no keyring ever confirmed it;
/// - no live record: a store that failed is the answer's error; else mint under the lock;
/// - mirror-first: a mirror record the keyring confirmed within the re-check interval answers alone.
struct IdentifierKeeper {
    let stores: Stores
    /// Fields every record this keeper mints carries (a sandbox's `portal=unanchored`).
    var mintExtra: [(String, String)] = []

    enum Target { case keyring, file }

    /// What one store holds for a key: a record and/or a tombstone (a keyring whose clean-up after
    /// a write was interrupted may hold both).
    struct Held: Equatable {
        var record: IdentifierRecord?
        var tombstone: UInt64 = 0
        /// A this-device-only record another TPM sealed (docs/STATE.md, rule 7): its generation,
        /// and the `.copied` error that says whose it is.
        var copied: Copied?
    }

    struct Copied: Equatable {
        var generation: UInt64
        var error: DeviceIDError
    }

    struct Sighting {
        var keyring: Stores.Answer<Held>
        var file: Stores.Answer<Held>
        /// The keyring's copy is in 0.1.0's form.
        var keyringIsLegacy = false
        /// The file's answer came from root's legacy store: the default directory has nothing.
        var fileIsLegacy = false
        /// With the file backend: the file store says this user keeps IDs in a keyring, which this
        /// backend does not ask, so an unconfirmed record is provisional (docs/STATE.md, rule 3).
        var keyringUnasked = false

        /// The highest reset generation any store answered with.
        var tombstone: UInt64 { max(keyring.value?.tombstone ?? 0, file.value?.tombstone ?? 0) }

        /// The highest generation of anything seen: what a reset must exceed.
        var highestGeneration: UInt64 {
            max(tombstone, keyring.value?.record?.generation ?? 0, file.value?.record?.generation ?? 0,
                keyring.value?.copied?.generation ?? 0, file.value?.copied?.generation ?? 0)
        }

        /// Rule 7: a store whose only live record is a copy counts as failed with `.copied`.
        var copiesAsFailures: Sighting {
            var s = self
            s.keyring = failedIfCopy(keyring)
            s.file = failedIfCopy(file)
            return s
        }

        private func failedIfCopy(_ answer: Stores.Answer<Held>) -> Stores.Answer<Held> {
            guard let held = answer.value, live(answer) == nil, let copy = held.copied, copy.generation >= tombstone
            else { return answer }
            return .failed(copy.error)
        }

        /// A store's record unless a tombstone of a later generation makes it dead.
        func live(_ answer: Stores.Answer<Held>) -> IdentifierRecord? {
            guard let record = answer.value?.record, record.generation >= tombstone else { return nil }
            return record
        }
    }

    /// Where an answer came from.
    enum Origin { case keyring, file, created }

    /// What `resolve` found or made.
    struct Resolution {
        var record: IdentifierRecord
        var source: Origin
        /// Why the keyring does not hold the ID although it answered: it refused or failed the write.
        var keyringFailure: DeviceIDError?
        /// Why the file mirror does not hold the ID although it was to receive it (a repair, a
        /// confirmation, a mint): the write failed (disk full, I/O). The answer stands — the keyring
        /// holds it, or the mirror's copy was already the answer — and is not provisional for this:
        /// the keyring is the authority, and the mirror only lets a later lookup skip D-Bus (or
        /// answer without a keyring), which the next lookup that reaches the keyring tries again.
        /// `StableID` has no place for it (no flag changes); it is kept here for callers and tests.
        var mirrorFailure: DeviceIDError?
        /// A store held a corrupt copy, which was replaced with the other store's valid one.
        var repairedCorrupt = false
        /// Answered by the mirror for the keyring that confirmed it (rule 5); D-Bus not used.
        var fromMirror = false
        /// Kept only where no keyring could be asked and never confirmed by one: a keyring that
        /// later answers with another ID wins (docs/STATE.md, I1).
        var provisional = false
        /// Answered while a keyring that is there could not answer (locked, frozen): it may answer
        /// the next call, so this answer is not remembered.
        var keyringMayAnswer = false
        /// The keyring holds this ID now: it answered with it, or took it in this call (a mint, or
        /// a file record promoted into a keyring that had none).
        var inKeyring = false
    }

    enum Decision {
        case use(IdentifierRecord, Origin, repair: [Target], provisional: Bool)
        case fail(DeviceIDError)
        case mint(into: [Target], generation: UInt64, provisional: Bool)

        /// Whether acting on it writes a store (a repair, a seal in place, a mint).
        var writes: Bool {
            switch self {
            case .use(_, _, let repair, _): !repair.isEmpty
            case .mint: true
            case .fail: false
            }
        }
    }

    /// What every store says about `key` now. `alongside`: the caller's own work to overlap with
    /// the keyring's D-Bus round trips (the API warms up the machine ID, which it reads after the
    /// lookup). It runs on the side thread that reads the file store when both stores are asked;
    /// with one store there is nothing to overlap and it does not run — so it must be work the
    /// caller would do later anyway, never work the lookup depends on.
    func look(_ key: StoreKey, alongside: @escaping () -> Void = {}) -> Sighting {
        if stores.keyring == nil {
            var s = withFile(Sighting(keyring: .notConfigured, file: .notConfigured), key)
            if s.file.answered { s.keyringUnasked = stores.keyringInUse() }
            return s
        }
        if stores.file == nil {
            let (keyring, legacy) = askKeyring(key)
            var s = Sighting(keyring: keyring, file: .notConfigured, keyringIsLegacy: legacy)
            // The secret-service backend also heeds the default directory's mirror: its tombstones,
            // and a record to adopt when the keyring has none (rule 2). Unreadable, it is left out:
            // this backend does not depend on the file store.
            if keyring.answered {
                var mirror = Self.ask(stores.lock, key, stores.binding)
                if case .empty = mirror, let legacy = stores.legacy { mirror = Self.ask(legacy, key, stores.binding) }
                if case .found(let held) = mirror { s.file = .found(held) }
            }
            return s
        }
        // Both stores: the file (and OpenSSL's first use, and the caller's side work) while D-Bus answers.
        let stores = self.stores
        let ((keyring, legacy), file) = Concurrently.run({ askKeyring(key) }, side: { () -> Stores.Answer<Held> in
            alongside()
            return IdentifierKeeper(stores: stores).askFile(key)
        })
        return withLegacy(Sighting(keyring: keyring, file: file, keyringIsLegacy: legacy), key)
    }

    private func withFile(_ sighting: Sighting, _ key: StoreKey) -> Sighting {
        var s = sighting
        s.file = askFile(key)
        return withLegacy(s, key)
    }

    /// Root's legacy store answers for the default directory when that has nothing for the key.
    private func withLegacy(_ sighting: Sighting, _ key: StoreKey) -> Sighting {
        guard case .empty = sighting.file, let legacy = stores.legacy else { return sighting }
        var s = sighting
        let answer = Self.ask(legacy, key, stores.binding)
        if let record = answer.value?.record {
            s.file = .found(Held(record: record))
            s.fileIsLegacy = true
        } else if case .failed = answer {
            s.file = answer
        }
        return s
    }

    /// The keyring's items for `key`: the preferred record and the highest tombstone, and whether
    /// a record is in 0.1.0's form.
    private func askKeyring(_ key: StoreKey) -> (Stores.Answer<Held>, Bool) {
        var legacy = false
        let binding = stores.binding
        let answer = stores.ask(keyring: { (store) throws(DeviceIDError) -> Held? in
            let (held, isLegacy) = try Self.read(store, key, binding)
            legacy = isLegacy
            return held
        })
        return (answer, legacy)
    }

    /// What the stores hold for `key`, as a sandbox's portal anchor weighs it (docs/STATE.md, "In
    /// a sandbox"): the live record — one without a `portal` field (0.2.0's, a host's) before any
    /// other, as it wins — the first failure of a store, and the highest generation seen.
    struct SandboxSighting {
        var live: IdentifierRecord?
        var failure: DeviceIDError?
        var generation: UInt64
    }

    func sandboxSighting(_ key: StoreKey) -> SandboxSighting {
        let sighting = Sighting(keyring: askKeyring(key).0, file: askFile(key))
        let live = [sighting.live(sighting.keyring), sighting.live(sighting.file)].compactMap { $0 }
        // What wins first: a record from before, then the derived ID's mirror, then a provisional one.
        let rank: (IdentifierRecord) -> Int = { record in
            switch record.portalOrigin {
            case nil: 0
            case .anchored: 1
            case .unanchored: 2
            }
        }
        return SandboxSighting(live: live.min { rank($0) < rank($1) },
                               failure: sighting.file.failure ?? sighting.keyring.failure,
                               generation: sighting.highestGeneration)
    }

    /// Writes `record` — the portal's derived ID — as the file store's record for `key`, under the
    /// locks, unless the store's copy changed meanwhile to one that wins (a record without a
    /// `portal` field) or that is the same ID.
    func adopt(_ record: IdentifierRecord, for key: StoreKey) throws(DeviceIDError) {
        guard let file = stores.file else { return }
        try stores.withLocks { () throws(DeviceIDError) in
            let now = sandboxSighting(key)
            if let live = now.live, live.portalOrigin == nil || live.id == record.id { return }
            var adopted = record
            adopted.generation = max(record.generation, now.generation)
            try file.write(key, adopted.serialized())
        }
    }

    private static func read(_ store: SecretServiceStore, _ key: StoreKey,
                             _ binding: MachineBinding) throws(DeviceIDError) -> (Held?, Bool) {
        var held = Held()
        var any = false
        var legacy = false
        var firstError: DeviceIDError?
        var sealed: SealedIdentifier?
        for item in try store.items(key) {
            do throws(DeviceIDError) {
                let (stored, isLegacy) = try StoredIdentifier.fromKeyring(secret: item.secret, attributes: item.attributes)
                any = true
                switch stored {
                case .record(let record):
                    legacy = legacy || isLegacy
                    held.record = held.record.map { $0.preferred(over: record) } ?? record
                case .tombstone(let n):
                    held.tombstone = max(held.tombstone, n)
                case .sealed(let item):
                    if item.generation >= sealed?.generation ?? 0 { sealed = item }
                }
            } catch {
                firstError = firstError ?? DeviceIDError(.corrupt, "keyring item: \(error.detail)")
            }
        }
        // The sealed item is opened outside the loop: a TPM that cannot answer fails the store
        // (it may hold the ID), never reads as a corrupt item.
        if let sealed {
            switch try open(sealed, key, binding) {
            case .found(let record): held.record = held.record.map { $0.preferred(over: record) } ?? record
            case .copied(let copy): held.copied = copy
            }
        }
        // Items that cannot be read beside a readable record or tombstone are left to the next
        // write's clean-up; alone, they may hold the ID: corrupt, never "none".
        if held.record == nil, held.tombstone == 0, let firstError { throw firstError }
        return (any ? held : nil, legacy)
    }

    private func askFile(_ key: StoreKey) -> Stores.Answer<Held> {
        guard let file = stores.file else { return .notConfigured }
        return Self.ask(file, key, stores.binding)
    }

    private enum Opened {
        case found(IdentifierRecord)
        case copied(Copied)
    }

    /// A sealed record opened by this TPM, or the copy another one sealed; other failures (no
    /// TPM, a deadline, a corrupt envelope) are the store's.
    private static func open(_ sealed: SealedIdentifier, _ key: StoreKey,
                             _ binding: MachineBinding) throws(DeviceIDError) -> Opened {
        do {
            return .found(try sealed.open(for: key, binding: binding))
        } catch where error.code == .copied {
            return .copied(Copied(generation: sealed.generation, error: error))
        }
    }

    private static func ask(_ store: FileStore, _ key: StoreKey, _ binding: MachineBinding) -> Stores.Answer<Held> {
        do {
            guard let bytes = try store.read(key) else { return .empty }
            switch try StoredIdentifier(parsing: bytes) {
            case .record(let record): return .found(Held(record: record))
            case .tombstone(let n): return .found(Held(tombstone: n))
            case .sealed(let sealed):
                switch try open(sealed, key, binding) {
                case .found(let record): return .found(Held(record: record))
                case .copied(let copy): return .found(Held(copied: copy))
                }
            }
        } catch {
            return .failed(error)
        }
    }

    /// The merge rule (docs/STATE.md) as a pure function: what to answer, write or mint, given what
    /// the stores said (`s`), the time (`now`, for the mirror's confirmation) and this keeper's
    /// configuration. It reads no store and no clock, and writes nothing; `resolve` acts on it.
    func decide(_ sighting: Sighting, now: UInt64) -> Decision {
        sealedInPlace(decideOnStores(sighting.copiesAsFailures, now: now), sighting.copiesAsFailures)
    }

    /// With this-device-only, a live portable answer is sealed in place: the same record, written
    /// sealed to every store that takes it (docs/STATE.md, "Protection classes"). A change, as a
    /// reset is: a keyring that may hold the ID in the clear and cannot answer fails it, and nothing
    /// is written — a copy left there would travel with the home. One that holds only another
    /// machine's copy, or a corrupt item (which the repair replaces), holds nothing in the clear.
    private func sealedInPlace(_ decision: Decision, _ s: Sighting) -> Decision {
        guard stores.protection == .thisDeviceOnly, case .use(var record, let source, var repair, let provisional) = decision,
              !record.sealed else { return decision }
        if case .failed(let error) = s.keyring, error.code != .copied, error.code != .corrupt {
            return .fail(DeviceIDError(error.code, "this ID is sealed to this machine in every store that may hold it, "
                                       + "and the keyring cannot answer now (nothing was written: a copy left there "
                                       + "in the clear would travel with the home): \(error.detail)"))
        }
        record.sealed = true
        if !repair.contains(.keyring), s.keyring.answered || s.keyring.value != nil { repair.append(.keyring) }
        if !repair.contains(.file), Self.receives(s.file) { repair.append(.file) }
        return .use(record, source, repair: repair, provisional: provisional)
    }

    private func decideOnStores(_ s: Sighting, now: UInt64) -> Decision {
        let keyringLive = s.live(s.keyring), fileLive = s.live(s.file)
        if let k = keyringLive {
            var repair: [Target] = s.keyringIsLegacy ? [.keyring] : []
            // The mirror takes the keyring's record when it lacks it, or holds it unconfirmed or
            // confirmed too long ago (mirror-first).
            let mirrorCurrent = fileLive.map { $0 == k && !s.fileIsLegacy && $0.confirmed != nil
                && (!stores.mirrorFirst || isConfirmed($0, now)) } ?? false
            if Self.receives(s.file) && !mirrorCurrent { repair.append(.file) }
            return .use(k, .keyring, repair: repair, provisional: false)
        }
        if let f = fileLive {
            if s.keyring.answered || s.keyring.failure?.code == .corrupt {
                // The keyring holds no live copy: it was wiped, appeared after the ID was made, or
                // holds only a corrupt copy, which the valid one replaces.
                return .use(f, .file, repair: [.keyring, .file], provisional: false)
            }
            let keyringSilent: Bool
            switch s.keyring {
            case .unreachable, .failed: keyringSilent = true
            default: keyringSilent = s.keyringUnasked
            }
            // Without the keyring, a record it confirmed within the re-check interval is as good as
            // a mirror-first answer; any other may be stale or never have been the keyring's.
            return .use(f, .file, repair: s.fileIsLegacy ? [.file] : [],
                        provisional: keyringSilent && !isFresh(f, now))
        }
        if let error = s.keyring.failure ?? s.file.failure { return .fail(error) }
        var targets = [Target]()
        if s.keyring.answered { targets.append(.keyring) }
        if s.file.answered { targets.append(.file) }
        guard !targets.isEmpty else {
            if case .unreachable(let error) = s.keyring { return .fail(error) }
            return .fail(DeviceIDError(.unavailable, "no store is available"))
        }
        var provisional = s.keyringUnasked
        if case .unreachable = s.keyring { provisional = true }
        return .mint(into: targets, generation: s.tombstone, provisional: provisional)
    }

    /// A store that said "none", holds something else (another ID, a dead one, a tombstone) or a
    /// corrupt copy takes the live record.
    private static func receives(_ answer: Stores.Answer<Held>) -> Bool {
        switch answer {
        case .empty, .found: return true
        case .failed(let error) where error.code == .corrupt || error.code == .copied: return true
        default: return false
        }
    }

    /// Whether the mirror's copy may answer alone (mirror-first): `isFresh`, in `auto`.
    private func isConfirmed(_ mirror: IdentifierRecord, _ now: UInt64) -> Bool {
        stores.mirrorFirst && isFresh(mirror, now)
    }

    /// Whether the keyring confirmed this copy within the re-check interval (not in the future).
    private func isFresh(_ mirror: IdentifierRecord, _ now: UInt64) -> Bool {
        guard let confirmed = mirror.confirmed else { return false }
        return confirmed <= now && now - confirmed < stores.mirrorRecheckSeconds
    }

    /// Rule 5: the mirror's record, when it answers alone.
    private func confirmedMirror(_ key: StoreKey, _ now: UInt64) -> Resolution? {
        guard stores.mirrorFirst, let record = askFile(key).value?.record, isConfirmed(record, now),
              record.sealed || stores.protection == .portable else { return nil }
        return Resolution(record: record, source: .keyring, fromMirror: true, inKeyring: true)
    }

    /// The identifier for `key`, minting one if and only if every store said "none".
    ///
    /// Double-checked, so that the common lookup takes no lock: the stores are read and decided on
    /// once without the locks (`answerWithoutLock`), and that decision is the answer when it needs
    /// no write — the stores agree — or is a failure. A decision that needs a write (a repair, a
    /// mint) is not acted on: another process may have minted, repaired or reset the ID since that
    /// read, so under the locks the stores are read again and decided on again (`settleUnderLock`),
    /// and only that second decision, on its own fresh sighting, is written.
    ///
    /// `now`: the call's one reading of the wall clock (the caller's `WallClock.seconds()`). The
    /// mirror's freshness, a mint's `created` and the mirror's `confirmed` are all this value;
    /// nothing in this type reads a clock. `alongside`: see `look`.
    func resolve(_ key: StoreKey, now: UInt64, fingerprint: () -> [UInt8]?,
                 alongside: @escaping () -> Void) throws(DeviceIDError) -> Resolution {
        if let mirrored = confirmedMirror(key, now) { return mirrored }
        if let answer = try answerWithoutLock(key, now: now, alongside: alongside) { return answer }
        return try stores.withLocks { () throws(DeviceIDError) -> Resolution in
            try settleUnderLock(key, now: now, fingerprint: fingerprint)
        }
    }

    /// `resolve`'s first phase, without the locks: the answer when the decision needs no write;
    /// throws a failure; nil when the decision needs a write, which only `settleUnderLock` makes.
    func answerWithoutLock(_ key: StoreKey, now: UInt64,
                           alongside: @escaping () -> Void = {}) throws(DeviceIDError) -> Resolution? {
        let sighting = look(key, alongside: alongside)
        switch decide(sighting, now: now) {
        case .use(let record, let source, let repair, let provisional) where repair.isEmpty:
            var resolution = Resolution(record: record, source: source, provisional: provisional)
            if case .failed = sighting.keyring { resolution.keyringMayAnswer = true }
            resolution.inKeyring = source == .keyring
            resolution.noteClosedKeyring(sighting)
            return resolution
        case .fail(let error):
            throw error
        case .use, .mint:
            return nil
        }
    }

    /// `resolve`'s second phase; the caller holds `stores.withLocks`. Decides on a sighting of its
    /// own and makes the writes that decision asks for.
    func settleUnderLock(_ key: StoreKey, now: UInt64, fingerprint: () -> [UInt8]?) throws(DeviceIDError) -> Resolution {
        let sighting = look(key)
        let decision = decide(sighting, now: now)
        if decision.writes, let reached = reachingKeyring(sighting, key) {
            let (keeper, wider) = reached
            return try keeper.act(on: keeper.decide(wider, now: now), wider, key, now: now, fingerprint: fingerprint)
        }
        return try act(on: decision, sighting, key, now: now, fingerprint: fingerprint)
    }

    /// Through the file backend, a this-device-only get that writes reaches the keyring the file
    /// store says the user keeps IDs in, as a reset does (docs/STATE.md, "Protection classes": a
    /// seal in place is a change): a keeper over both stores, and the sighting with the keyring's
    /// answer, in which any failure is one. nil: another backend or class, or no marker.
    private func reachingKeyring(_ sighting: Sighting, _ key: StoreKey) -> (IdentifierKeeper, Sighting)? {
        guard stores.keyring == nil, stores.protection == .thisDeviceOnly, sighting.keyringUnasked else { return nil }
        var legacy = false
        let binding = stores.binding
        guard let reach = stores.askKeyringForChange({ (store) throws(DeviceIDError) -> Held? in
            let (held, isLegacy) = try Self.read(store, key, binding)
            legacy = isLegacy
            return held
        }) else { return nil }
        var wider = sighting
        wider.keyring = reach.answer
        wider.keyringIsLegacy = legacy
        wider.keyringUnasked = false
        return (IdentifierKeeper(stores: stores.reaching(reach.store), mintExtra: mintExtra), wider)
    }

    /// Makes the writes `decision`, taken on `sighting`, asks for; the caller holds the locks.
    private func act(on decision: Decision, _ sighting: Sighting, _ key: StoreKey, now: UInt64,
                     fingerprint: () -> [UInt8]?) throws(DeviceIDError) -> Resolution {
        switch decision {
        case .use(let record, let source, let repair, let provisional):
            // The answer stands even if a copy cannot be written now; a store that refused is
            // reported with it, and so is a corrupt copy that was replaced.
            var resolution = Resolution(record: record, source: source, provisional: provisional)
            // As in the first phase: a keyring that could not answer may answer the next call.
            if case .failed = sighting.keyring { resolution.keyringMayAnswer = true }
            var keyringHolds = sighting.live(sighting.keyring) == record && !sighting.keyringIsLegacy
            let sealedForm = try seal(record, key, if: !repair.isEmpty)
            for target in Self.keyringFirst(repair) {
                do throws(DeviceIDError) {
                    try write(record, key, to: target, confirmedAt: keyringHolds ? now : nil, sealed: sealedForm)
                    if target == .keyring { keyringHolds = true }
                    let answer = target == .keyring ? sighting.keyring : sighting.file
                    if case .failed(let error) = answer, error.code == .corrupt { resolution.repairedCorrupt = true }
                } catch {
                    resolution.noteFailure(error, writing: target)
                }
            }
            if keyringHolds { stores.markKeyringInUse() }
            // Refused by a keyring that answered: another directory's first run may still
            // put another ID there, which would win (docs/STATE.md, I1).
            if resolution.keyringFailure != nil { resolution.provisional = true }
            resolution.inKeyring = keyringHolds
            resolution.noteClosedKeyring(sighting)
            return resolution
        case .fail(let error):
            throw error
        case .mint(let targets, let generation, let provisional):
            var record = IdentifierRecord(id: try ID128.random(), created: now, machine: fingerprint(),
                                          generation: generation)
            record.extra = mintExtra
            record.sealed = stores.protection == .thisDeviceOnly
            let sealedForm = try seal(record, key, if: true)
            var resolution = Resolution(record: record, source: .created, provisional: provisional)
            var firstError: DeviceIDError?
            var written = 0
            var keyringHolds = false
            for target in Self.keyringFirst(targets) {
                do throws(DeviceIDError) {
                    try write(record, key, to: target, confirmedAt: keyringHolds ? now : nil, sealed: sealedForm)
                    if target == .keyring { keyringHolds = true }
                    written += 1
                } catch {
                    firstError = firstError ?? error
                    resolution.noteFailure(error, writing: target)
                }
            }
            if written == 0, let firstError { throw firstError }
            if keyringHolds { stores.markKeyringInUse() }
            if resolution.keyringFailure != nil { resolution.provisional = true }
            resolution.inKeyring = keyringHolds
            resolution.noteClosedKeyring(sighting)
            return resolution
        }
    }

    /// Resets the identifier (docs/STATE.md, "Reset"): every store that may hold it receives a
    /// tombstone of a generation above anything seen, so that no older copy anywhere is returned
    /// or written back again. A store that may hold it and cannot answer fails the reset before
    /// anything is written; a corrupt copy is overwritten.
    func reset(_ key: StoreKey) throws(DeviceIDError) {
        try stores.withLocks { () throws(DeviceIDError) in
            var sighting = look(key)
            // The file backend reaches the keyring too when the file store says the user keeps IDs there.
            var keyring = stores.keyring
            if keyring == nil,
               let reach = stores.askKeyringForChange({ (store) throws(DeviceIDError) -> Held? in try Self.read(store, key, stores.binding).0 }) {
                keyring = reach.store
                sighting.keyring = reach.answer
            }
            // The secret-service backend also clears the default directory's mirror when it holds a
            // copy, a corrupt one included.
            var mirror = stores.file
            if mirror == nil {
                let answer = Self.ask(stores.lock, key, stores.binding)
                if answer.value != nil || answer.failure?.code == .corrupt {
                    mirror = stores.lock
                    sighting.file = answer
                }
            }
            for answer in [sighting.keyring, sighting.file] {
                if let error = answer.failure, error.code != .corrupt { throw error }
            }
            // A Secret Service with no default collection may hold the ID in one that is not open:
            // a reset must reach it (I2), so it waits for a collection (auto passes over it for a get).
            if case .unreachable(let error) = sighting.keyring, error.code == .noCollection { throw error }
            let tombstone = sighting.highestGeneration + 1
            // The mirror's tombstone is staged first and put in place last: a keyring that
            // refuses leaves everything as it was.
            let staged = try mirror?.stage(key, StoredIdentifier.tombstoneText(tombstone))
            if let keyring, sighting.keyring.answered || sighting.keyring.failure != nil {
                try keyring.write(key, [], extra: StoredIdentifier.tombstoneAttributes(tombstone))
                stores.markKeyringInUse()
            }
            try staged?.commit()
        }
    }

    /// The keyring is written before the mirror, so that the mirror's copy can say the keyring holds it.
    private static func keyringFirst(_ targets: [Target]) -> [Target] {
        (targets.contains(.keyring) ? [.keyring] : []) + (targets.contains(.file) ? [.file] : [])
    }

    /// A sealed record's stored form, made once for every store it goes to (one TPM conversation);
    /// nil for a portable record, or when nothing is to be written. Without a usable TPM this is
    /// the refusal, in the TPM's words: nothing is written in the clear in its place.
    private func seal(_ record: IdentifierRecord, _ key: StoreKey, if writing: Bool) throws(DeviceIDError) -> SealedIdentifier? {
        guard writing, record.sealed else { return nil }
        do {
            return try SealedIdentifier(sealing: record, for: key, binding: stores.binding)
        } catch {
            throw DeviceIDError(error.code, "a this-device-only record is sealed by this machine's TPM, and it "
                                + "cannot seal now (nothing was written in the clear instead): \(error.detail)").about(.tpm)
        }
    }

    /// `confirmedAt`: the keyring holds this ID, as of then (mirror-first); nil writes no confirmation.
    /// `sealed`: the record's sealed form, which is what is written when given.
    private func write(_ record: IdentifierRecord, _ key: StoreKey, to target: Target,
                       confirmedAt: UInt64?, sealed: SealedIdentifier?) throws(DeviceIDError) {
        if let sealed {
            switch target {
            case .keyring: try stores.keyring?.write(key, sealed.envelope, extra: sealed.keyringAttributes)
            case .file: try stores.file?.write(key, sealed.serialized(confirmed: confirmedAt))
            }
            return
        }
        switch target {
        case .keyring: try stores.keyring?.write(key, record.keyringSecret, extra: record.keyringAttributes)
        case .file:
            var copy = record
            copy.confirmed = confirmedAt
            try stores.file?.write(key, copy.serialized())
        }
    }
}

extension IdentifierKeeper.Resolution {
    /// A Secret Service with no default collection, which `auto` passed over (`Stores.classify`):
    /// the answer is kept only in the file store, and says why — the words name the remedy.
    fileprivate mutating func noteClosedKeyring(_ sighting: IdentifierKeeper.Sighting) {
        if case .unreachable(let error) = sighting.keyring, error.code == .noCollection, keyringFailure == nil {
            keyringFailure = error
        }
    }

    /// A write of the answer that failed: kept as the failure of the store it was for.
    fileprivate mutating func noteFailure(_ error: DeviceIDError, writing target: IdentifierKeeper.Target) {
        switch target {
        case .keyring: keyringFailure = error
        case .file: mirrorFailure = error
        }
    }
}
