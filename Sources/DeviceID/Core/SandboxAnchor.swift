/// What anchors identifiers and secrets inside a sandbox (Flatpak, Snap), where the app's own
/// files go with the app: the Secret portal's secret for the app, which the host's keyring keeps
/// (docs/ENVIRONMENTS.md "Sandboxes and containers"). From it, with HMAC-SHA256 as systemd
/// derives app-specific machine IDs:
///
/// - the stable ID of each app id asked for: HMAC(HMAC(S, "deviceid.portal.stable-id.v1"), app id),
///   first 16 bytes, made a version-4 UUID — the same after `flatpak uninstall --delete-data`,
///   unrelated across app ids and across sandboxed apps (each has its own S), and unlinkable to S;
/// - the key that seals secrets stored in the app's files: HMAC(S, "deviceid.portal.sealing.v1").
///
/// S itself is wiped as soon as both are derived (`SecretPortal.retrieve` holds its one copy); the
/// derived keys stay in memory for the process's life, as a keyring client's session keys do.
enum SandboxAnchor {
    struct Keys: Sendable {
        fileprivate let stable: [UInt8]
        let sealing: [UInt8]
    }

    enum Answer {
        case anchored(Keys)
        /// No portal secret for this app, positively: why.
        case absent(String)
    }

    private static let known = Locked<Keys?>(nil)

    /// In a sandbox, what the portal answers; nil outside any sandbox (nothing is asked).
    static func ask(timeoutMilliseconds: UInt32) throws(DeviceIDError) -> Answer? {
        guard Surroundings.current().sandbox != nil else { return nil }
        if let keys = known.withLock({ $0 }) { return .anchored(keys) }
        let answer = try SecretPortal.retrieve(timeoutMilliseconds: timeoutMilliseconds) { secret in
            Keys(stable: SHA256.hmac(key: secret, message: Array("deviceid.portal.stable-id.v1".utf8)),
                 sealing: SHA256.hmac(key: secret, message: Array("deviceid.portal.sealing.v1".utf8)))
        }
        switch answer {
        case .absent(let why):
            return .absent(why)
        case .secret(let keys):
            known.withLock { $0 = keys }
            return .anchored(keys)
        }
    }

    /// The stable ID of `appID` in this sandbox.
    static func stableID(for appID: String, _ keys: Keys) -> ID128 {
        ID128(bytes: Array(SHA256.hmac(key: keys.stable, message: Array(appID.utf8)).prefix(16)))!.asVersion4()
    }
}

extension SandboxAnchor {
    /// Its lazily made locks, made before fork() (`LazyGlobals`).
    static func settleLazyGlobals() { _ = known }
}
