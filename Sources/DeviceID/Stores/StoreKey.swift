/// What an item in a store is filed under: the `service` and `username` attributes of a Secret
/// Service item (the convention of `secret-tool` and the common keyring clients), and the file
/// name derived from them in the file store.
package struct StoreKey: Hashable, Sendable {
    enum Kind: UInt8, Sendable {
        /// A generic secret of the caller's: stored only in the selected backend.
        case secret = 1
        /// A DeviceID identifier record: kept in the keyring and mirrored in the file store.
        case identifier = 2
        /// A fact about the file store itself (the keyring marker, docs/STATE.md): file store only.
        case state = 3
        /// A secret of the caller's sealed with the sandbox's key (`Sealing`, `SandboxAnchor`):
        /// file store only, in a file of its own beside where the plain one would be.
        case sealedSecret = 4
    }

    let kind: Kind
    let service: String
    let account: String

    /// Services under this prefix belong to DeviceID's own identifiers.
    static let reservedPrefix = Names.reservedServicePrefix

    package static func secret(service: String, account: String) -> StoreKey {
        StoreKey(kind: .secret, service: service, account: account)
    }

    /// The sealed form of this secret's key.
    var sealed: StoreKey { StoreKey(kind: .sealedSecret, service: service, account: account) }

    /// An identifier of a given scope ("app", "vendor", …) for `name`.
    static func identifier(scope: String, name: String) -> StoreKey {
        StoreKey(kind: .identifier, service: reservedPrefix + scope, account: name)
    }

    /// Whether this is an app's stable ID (`identifier(scope: "app", …)`).
    var isAppIdentifier: Bool { kind == .identifier && service == Self.reservedPrefix + "app" }

    /// An on/off setting (SettingKeeper). Settings are kept exactly like identifiers — in the keyring
    /// and mirrored — and so under the identifier kind: the files 0.1.0 wrote for them
    /// (`id-…`, service `deviceid.setting`) must keep their names.
    static func setting(_ name: String) -> StoreKey {
        identifier(scope: "setting", name: name)
    }

    /// A fact about the file store itself, never in the keyring.
    static func state(_ name: String) -> StoreKey {
        StoreKey(kind: .state, service: reservedPrefix + "state", account: name)
    }

    /// The bytes that identify the item, used for the file name and checked on every read.
    var encoded: [UInt8] {
        Array(service.utf8) + [0] + Array(account.utf8)
    }
}
