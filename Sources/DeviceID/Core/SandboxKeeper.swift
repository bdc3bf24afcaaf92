/// The state model's rule for an app's stable ID in a sandbox (docs/STATE.md, "In a sandbox"),
/// auto backend: the Secret portal's derived ID (`SandboxAnchor`) is the authority, mirrored in
/// the app's files (a record with `portal=anchored`) so that a portal that later stays silent
/// cannot lead to a second ID; a record from before (no `portal` field: 0.2.0's, a keyring's)
/// wins over it; a record minted while no portal answered (`portal=unanchored`, provisional)
/// yields to it.
struct SandboxKeeper {
    let keeper: IdentifierKeeper
    let timeoutMilliseconds: UInt32

    enum Outcome {
        /// The derived ID: from the portal now, or from its mirror while the portal is silent;
        /// `replacedMirror` when the mirror held an ID derived from another secret.
        case derived(ID128, fromMirror: Bool, replacedMirror: Bool)
        /// The stores answer by the merge rule; a record it mints carries these fields.
        case stores(mintExtra: [(String, String)])
    }

    static let anchoredField = [(IdentifierRecord.portalField, IdentifierRecord.PortalOrigin.anchored.rawValue)]
    static let unanchoredField = [(IdentifierRecord.portalField, IdentifierRecord.PortalOrigin.unanchored.rawValue)]

    func get(_ key: StoreKey, now: UInt64, fingerprint: () -> [UInt8]?) throws(DeviceIDError) -> Outcome {
        let seen = keeper.sandboxSighting(key)
        // A store that cannot answer may hold a record that wins: the merge rule fails or repairs.
        if seen.failure != nil { return .stores(mintExtra: []) }
        if let live = seen.live, live.portalOrigin == nil { return .stores(mintExtra: []) }
        let answer: SandboxAnchor.Answer?
        do {
            answer = try SandboxAnchor.ask(timeoutMilliseconds: timeoutMilliseconds)
        } catch {
            // Silent: a mirror of the derived ID answers; a provisional record answers; with
            // neither, nothing is minted over a portal that may answer.
            guard let live = seen.live else { throw error }
            if live.portalOrigin == .anchored { return .derived(live.id, fromMirror: true, replacedMirror: false) }
            return .stores(mintExtra: [])
        }
        switch answer {
        case .anchored(let keys)?:
            let id = SandboxAnchor.stableID(for: key.account, keys)
            // The portal's secret changed (the host's keyring item replaced): its ID wins, as the
            // authority, and the answer says it is not the one derived before.
            let replaced = seen.live.map { $0.portalOrigin == .anchored && $0.id != id } ?? false
            if seen.live?.id != id || seen.live?.portalOrigin != .anchored {
                var mirror = IdentifierRecord(id: id, created: now, machine: fingerprint(), generation: seen.generation)
                mirror.extra = Self.anchoredField
                // Best effort: without the mirror, a portal silent later lets a provisional ID be
                // minted, which this ID replaces when the portal answers again.
                try? keeper.adopt(mirror, for: key)
            }
            return .derived(id, fromMirror: false, replacedMirror: replaced)
        case .absent?:
            if let live = seen.live, live.portalOrigin == .anchored {
                return .derived(live.id, fromMirror: true, replacedMirror: false)
            }
            return .stores(mintExtra: Self.unanchoredField)
        case nil:
            return .stores(mintExtra: [])
        }
    }

    /// Resets through the stores, or refuses: a derived ID (answered now, or mirrored) cannot be
    /// reset from inside the sandbox — a tombstone in the app's files would go with them and the
    /// same ID would come back.
    func reset(_ key: StoreKey) throws(DeviceIDError) {
        let seen = keeper.sandboxSighting(key)
        if seen.failure != nil || seen.live?.portalOrigin == nil && seen.live != nil { return try keeper.reset(key) }
        if seen.live?.portalOrigin == .anchored { throw Self.refusal }
        let answer: SandboxAnchor.Answer?
        do {
            answer = try SandboxAnchor.ask(timeoutMilliseconds: timeoutMilliseconds)
        } catch {
            guard seen.live != nil else { throw error }
            return try keeper.reset(key)
        }
        if case .anchored? = answer { throw Self.refusal }
        try keeper.reset(key)
    }

    static let refusal = DeviceIDError(.unsupported, "in this sandbox the app's ID is derived from the Secret "
        + "portal's secret for the app, which the host's keyring keeps and the app cannot change; a reset kept in "
        + "the app's files would be undone by removing them (docs/ENVIRONMENTS.md \"Sandboxes and containers\")")
}
