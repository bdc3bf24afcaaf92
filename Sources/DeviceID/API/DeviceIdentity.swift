/// The entry point: stable identifiers per app, and keychain-style secret storage.
///
///     import DeviceID
///     let id = try DeviceIdentity.shared.stableID(for: "com.example.app")
///     print(id.uuidString, id.source)
///
/// Thread-safe. After the first answer for an app the process answers from memory, until
/// `reset(appID:)` or `configure(_:)`.
public final class DeviceIdentity: Sendable {
    private struct State {
        /// Where the configuration comes from: the environment plus overrides, or a fixed one.
        var fixed: Configuration?
        var overrides = Configuration.Overrides()
        var configuration: Result<Configuration, DeviceIDError>
        var cache: [StoreKey: StableID] = [:]
        /// The `generation` the cached answers belong to; another, and they are dropped.
        var cacheGeneration: UInt64 = 0
    }

    private let state: Locked<State>
    /// Moved only under `state`'s lock; read without it by the C ABI's cache on every call.
    private let generationCounter = AtomicCounter(1)
    /// Moved by every instance's reset and reconfiguration: instances configured alike share the
    /// stores, so a reset through one (a `deviceid_context`, a Python `Client`) makes every
    /// other's remembered answers stale too — one ID per app in a process, whichever way it asks.
    private static let processGeneration = AtomicCounter(0)

    /// Grows with every reset and reconfiguration, of this instance or any other: an answer
    /// computed at an older generation may be stale. Caches outside this object (the C ABI's
    /// per-thread one) keep answers with the generation they were computed at and ignore them
    /// once it has moved on.
    public var generation: UInt64 { generationCounter.load() &+ Self.processGeneration.load() }

    private func forgetAnswers(_ state: inout State) {
        state.cache.removeAll()
        generationCounter.increment()
        Self.processGeneration.increment()
    }

    /// The cached answers, dropped first if they belong to an older generation. Under the lock.
    private func currentCache(_ state: inout State) -> [StoreKey: StableID] {
        let now = generation
        if state.cacheGeneration != now {
            state.cache.removeAll()
            state.cacheGeneration = now
        }
        return state.cache
    }

    /// Keeps `answer` if nothing moved the generation since `computedAt`. Under the lock.
    private func remember(_ answer: StableID, for key: StoreKey, computedAt: UInt64, _ state: inout State) {
        guard generation == computedAt else { return }
        if state.cacheGeneration != computedAt {
            state.cache.removeAll()
            state.cacheGeneration = computedAt
        }
        state.cache[key] = answer
    }

    /// The instance the C library, the Python package and the CLI use: configured from
    /// `DEVICEID_BACKEND`, `DEVICEID_TIMEOUT_MS` and `DEVICEID_STORE_DIR`. An invalid variable
    /// makes every call fail with `.invalidArgument` until `configure(_:)` replaces it.
    public static let shared = DeviceIdentity()

    public init(configuration: Configuration) {
        state = Locked(State(fixed: configuration,
                            configuration: Result { () throws(DeviceIDError) in try configuration.validated() }))
    }

    /// An instance configured from the environment.
    public init() {
        state = Locked(State(configuration: Result { () throws(DeviceIDError) in try Configuration.resolved() }))
    }

    /// The configuration in force.
    public func configuration() throws(DeviceIDError) -> Configuration {
        try state.withLock { $0.configuration }.get()
    }

    /// Replaces the configuration and forgets every cached answer.
    public func configure(_ configuration: Configuration) throws(DeviceIDError) {
        let valid = try configuration.validated()
        state.withLock { state in
            state.fixed = valid
            state.overrides = Configuration.Overrides()
            state.configuration = .success(valid)
            forgetAnswers(&state)
        }
    }

    /// Overrides settings — what `deviceid_set_backend()`, Python's `set_backend()` and the CLI's
    /// `--backend` do. Each override replaces the environment's value (or the fixed
    /// configuration's) for its setting; an invalid environment variable that nothing overrides
    /// still makes calls fail, naming it. Throws only for an invalid override, which changes nothing.
    public func override(_ change: (inout Configuration.Overrides) -> Void) throws(DeviceIDError) {
        let (fixed, current) = state.withLock { ($0.fixed, $0.overrides) }
        var overrides = current
        change(&overrides)
        let valid = try overrides.validated()
        let configuration = Result { () throws(DeviceIDError) -> Configuration in
            guard var base = fixed else { return try Configuration.resolved(valid) }
            valid.apply(to: &base)
            return try base.validated()
        }
        state.withLock { state in
            state.overrides = valid
            state.configuration = configuration
            forgetAnswers(&state)
        }
    }

    func stores() throws(DeviceIDError) -> Stores {
        try configuration().stores()
    }

    // MARK: Stable identifiers

    /// This device's identifier for `appID`: the same for every call, process, language and
    /// reinstall of the app, until reset. Minted (UUID v4) only when every store said "none".
    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.stableID(for:)'")
    public func stableID(for appID: String) throws(DeviceIDError) -> StableID {
        try Names.validate(appID, "app id")
        return try identifier(StoreKey.identifier(scope: "app", name: appID))
    }

    /// Removes the app's identifier from every store; the next `stableID(for:)` mints a new one.
    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.reset(appID:)'")
    public func reset(appID: String) throws(DeviceIDError) {
        try Names.validate(appID, "app id")
        try resetIdentifier(StoreKey.identifier(scope: "app", name: appID))
    }

    /// The cached answer for `key`, if any: the fast path of `deviceid_get`.
    func cachedIdentifier(_ key: StoreKey) -> StableID? {
        state.withLock { currentCache(&$0)[key] }
    }

    func identifier(_ key: StoreKey) throws(DeviceIDError) -> StableID {
        // Read first: a reset or reconfiguration from here on moves it, and the answer is not kept.
        let (cached, configuration, computedAt) = state.withLock { state in
            let now = generation
            return (currentCache(&state)[key], state.configuration, now)
        }
        if let cached { return cached }
        let chosen = try configuration.get()
        let stores = try chosen.stores()
        var keeper = IdentifierKeeper(stores: stores)
        if let sandbox = sandboxKeeper(key, chosen, keeper) {
            switch try sandbox.get(key, now: WallClock.seconds(), fingerprint: MachineID.fingerprint) {
            case .derived(let id, let fromMirror, let replacedMirror):
                let answer = Self.derivedAnswer(id, fromMirror: fromMirror, replacedMirror: replacedMirror)
                // The old ID may be remembered here, by this instance or another (a context, a
                // Python Client, the C ABI's per-thread cache): all forget it, as after a reset.
                if replacedMirror { state.withLock { forgetAnswers(&$0) } }
                // From the mirror, the portal is asked again next time; a change is said once.
                if !fromMirror, answer.isSettled { keep(answer, for: key, computedAt: computedAt) }
                return answer
            case .stores(let mintExtra):
                keeper.mintExtra = mintExtra
            }
        }
        // The machine ID is read after the lookup; its first read (a warm-up, whose failure the
        // fingerprint below meets again) overlaps the keyring's D-Bus round trips.
        let resolution = try keeper.resolve(key, now: WallClock.seconds(), fingerprint: MachineID.fingerprint,
                                            alongside: { _ = try? MachineID.raw() })
        let answer = Self.answer(resolution, storePath: stores.lock.path)
        if answer.isSettled { keep(answer, for: key, computedAt: computedAt) }
        return answer
    }

    /// Remembers an answer computed at `computedAt` (unless a reset or reconfiguration came since).
    private func keep(_ answer: StableID, for key: StoreKey, computedAt: UInt64) {
        state.withLock { state in remember(answer, for: key, computedAt: computedAt, &state) }
    }

    /// A sandboxed app's stable ID, derived from the Secret portal's secret.
    private static func derivedAnswer(_ id: ID128, fromMirror: Bool, replacedMirror: Bool) -> StableID {
        var flags: StableID.Flags = fromMirror ? .mirrored : []
        if replacedMirror { flags.insert(.anchorChanged) }
        if Surroundings.current().machineID.weak { flags.insert(.weak) }
        return StableID(id: id, source: .portal, flags: flags, location: .portal)
    }

    /// What the stores' resolution says to the caller: the ID, where it came from and lives, and
    /// the flags that tell what is true of it.
    private static func answer(_ resolution: IdentifierKeeper.Resolution, storePath: String) -> StableID {
        let record = resolution.record
        let surroundings = Surroundings.current()
        // In the keyring when it holds the ID; else wherever the file store's directory lives.
        let location = record.portalOrigin == .anchored ? StorageLocation.portal
            : resolution.inKeyring ? StorageLocation.keyring : surroundings.location(ofFilesIn: storePath)
        var answer = StableID(id: record.id, source: StableID.Source(resolution.source),
                              flags: flags(resolution, location: location, surroundings: surroundings),
                              keyringFailure: resolution.keyringFailure, location: location)
        answer.awaitsKeyring = resolution.keyringMayAnswer && resolution.provisional
        return answer
    }

    private static func flags(_ resolution: IdentifierKeeper.Resolution, location: StorageLocation,
                              surroundings: Surroundings) -> StableID.Flags {
        let record = resolution.record
        var flags: StableID.Flags = resolution.keyringFailure == nil ? [] : .fileOnly
        if resolution.repairedCorrupt { flags.insert(.repaired) }
        if resolution.fromMirror { flags.insert(.mirrored) }
        if resolution.provisional { flags.insert(.provisional) }
        // Minted in a sandbox while no portal answered: the derived ID replaces it when one does.
        if record.portalOrigin == .unanchored { flags.insert(.provisional) }
        if let fingerprint = MachineID.fingerprint() {
            if let stored = record.machine, stored != fingerprint { flags.insert(.deviceChanged) }
        } else {
            // No machine ID: the ID cannot be bound to this machine, so a clone would go unnoticed.
            flags.insert(.weak)
        }
        // A machine ID shared by every container of an image: clone detection cannot tell them apart.
        if surroundings.machineID.weak { flags.insert(.weak) }
        if location == .appData { flags.insert(.appDataOnly) }
        return flags
    }

    func resetIdentifier(_ key: StoreKey) throws(DeviceIDError) {
        let configuration = try configuration()
        let keeper = IdentifierKeeper(stores: try configuration.stores())
        defer {
            state.withLock { forgetAnswers(&$0) }
        }
        if let sandbox = sandboxKeeper(key, configuration, keeper) { return try sandbox.reset(key) }
        try keeper.reset(key)
    }

    /// The sandbox's rule (`SandboxKeeper`) applies to an app's stable ID, with the auto backend
    /// and the portable class, in a Flatpak or Snap; nil elsewhere. Not this-device-only: the
    /// portal's secret lives in the host's login keyring, which a copied home carries, so an ID
    /// derived from it would read the same on another machine (docs/STATE.md, "Protection
    /// classes"); the stores' rule seals to the TPM instead, or refuses where the sandbox has none.
    private func sandboxKeeper(_ key: StoreKey, _ configuration: Configuration,
                               _ keeper: IdentifierKeeper) -> SandboxKeeper? {
        guard configuration.backend == .auto, configuration.protection == .portable, key.isAppIdentifier,
              Surroundings.current().sandbox != nil, keeper.stores.file != nil else { return nil }
        return SandboxKeeper(keeper: keeper, timeoutMilliseconds: configuration.timeoutMilliseconds)
    }

    // MARK: Secrets

    /// The largest secret accepted, in bytes.
    public static let maximumSecretSize = FileEnvelope.maximumSecretSize

    /// Stores `secret` (any bytes, empty allowed) under service and account, replacing what was
    /// there, and says where it went. In `auto` it goes to the keyring when a Secret Service takes
    /// it, else — in a sandbox whose Secret portal anchors the app — to a file sealed with the app's
    /// key; with neither, the call fails with `.noKeyring` and nothing is written (or, where the file
    /// store says this user keeps IDs in a keyring that cannot be reached now, with that keyring's
    /// `.unavailable` or `.noCollection`): a secret lands in a file in the clear only where the file
    /// backend was chosen. Never copied out of the keyring.
    @discardableResult
    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.storeSecret(_:service:account:)'")
    public func storeSecret(_ secret: [UInt8], service: String, account: String) throws(DeviceIDError) -> SecretLocation {
        try Names.validateSecret(service: service, account: account)
        guard secret.count <= Self.maximumSecretSize else {
            throw DeviceIDError(.tooLarge, "\(secret.count) bytes; the limit is \(Self.maximumSecretSize)")
        }
        return try secretKeeper().store(StoreKey.secret(service: service, account: account), secret)
    }

    /// The secret stored under service and account, or nil when no store has it.
    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.lookupSecret(service:account:)'")
    public func lookupSecret(service: String, account: String) throws(DeviceIDError) -> [UInt8]? {
        try lookupSecretAndLocation(service: service, account: account)?.value
    }

    /// The secret and where it was found (a plaintext file written before the keyring was there
    /// is worth telling the user about), or nil when no store has it.
    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.lookupSecretAndLocation(service:account:)'")
    public func lookupSecretAndLocation(service: String, account: String) throws(DeviceIDError)
        -> (value: [UInt8], location: SecretLocation)? {
        try Names.validateSecret(service: service, account: account)
        return try secretKeeper().lookup(StoreKey.secret(service: service, account: account))
    }

    /// Deletes the secret from every store of the backend; false when none had it.
    @discardableResult
    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.deleteSecret(service:account:)'")
    public func deleteSecret(service: String, account: String) throws(DeviceIDError) -> Bool {
        try Names.validateSecret(service: service, account: account)
        return try secretKeeper().delete(StoreKey.secret(service: service, account: account))
    }

    private func secretKeeper() throws(DeviceIDError) -> SecretKeeper {
        let configuration = try configuration()
        return SecretKeeper(stores: try configuration.stores(), timeoutMilliseconds: configuration.timeoutMilliseconds)
    }
}
