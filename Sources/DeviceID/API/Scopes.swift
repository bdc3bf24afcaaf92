/// The identifier techniques of the iOS playbook that DeviceID keeps in its stores.
/// The raw values are the C ABI's `DEVICEID_SCOPE_*`.
public enum Scope: Int32, Sendable, CaseIterable {
    /// One ID per app id (the core `stableID(for:)`).
    case app = 1
    /// identifierForVendor: one ID per vendor id, shared by that vendor's apps.
    case vendor = 2
    /// advertisingIdentifier: one per user, resettable, with "limit tracking".
    case advertising = 3
    /// OpenUDID: one ID shared by every app of the user, with a per-app opt-out.
    case openUDID = 4

    func key(_ name: String) -> StoreKey {
        switch self {
        case .app: .identifier(scope: "app", name: name)
        case .vendor: .identifier(scope: "vendor", name: name)
        case .advertising: .identifier(scope: "advertising", name: "user")
        case .openUDID: .identifier(scope: "openudid", name: "shared")
        }
    }
}

extension DeviceIdentity {
    private func settings() throws(DeviceIDError) -> SettingKeeper {
        SettingKeeper(stores: try stores())
    }

    // MARK: identifierForVendor

    /// The ID shared by every app that passes the same `vendorID` (the keychain access-group
    /// idea); unrelated across vendors and to the machine ID: each is an independent random UUID.
    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.vendorID(for:)'")
    public func vendorID(for vendorID: String) throws(DeviceIDError) -> StableID {
        try Names.validate(vendorID, "vendor id")
        return try identifier(Scope.vendor.key(vendorID))
    }

    /// "All the vendor's apps were removed": the next `vendorID(for:)` mints a new one.
    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.resetVendorID(for:)'")
    public func resetVendorID(for vendorID: String) throws(DeviceIDError) {
        try Names.validate(vendorID, "vendor id")
        try resetIdentifier(Scope.vendor.key(vendorID))
    }

    // MARK: advertisingIdentifier

    private static let limitTracking = "advertising.limit-tracking"

    /// The user's advertising ID; all zeros, flagged `.limited`, while tracking is limited (the
    /// real one is kept for when it is turned off).
    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.advertisingID()'")
    public func advertisingID() throws(DeviceIDError) -> StableID {
        let limited = try settings().read(Self.limitTracking)
        let real = try identifier(Scope.advertising.key(""))
        guard limited else { return real }
        var zeros = StableID(id: .null, source: real.source, flags: real.flags.union(.limited), keyringFailure: real.keyringFailure)
        zeros.awaitsKeyring = real.awaitsKeyring
        return zeros
    }

    /// A new random advertising ID. While tracking is limited it stays hidden until turned off.
    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.resetAdvertisingID()'")
    public func resetAdvertisingID() throws(DeviceIDError) {
        try resetIdentifier(Scope.advertising.key(""))
        _ = try identifier(Scope.advertising.key(""))
    }

    /// Turns "limit ad tracking" on or off; persistent.
    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.setAdvertisingTrackingLimited(_:)'")
    public func setAdvertisingTrackingLimited(_ limited: Bool) throws(DeviceIDError) {
        try settings().write(Self.limitTracking, limited)
    }

    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.isAdvertisingTrackingLimited()'")
    public func isAdvertisingTrackingLimited() throws(DeviceIDError) -> Bool {
        try settings().read(Self.limitTracking)
    }

    // MARK: OpenUDID

    private static func optOut(_ appID: String) -> String { "openudid.opt-out:" + appID }

    /// The one ID every app of this user shares. The first app to ask creates it. An app that
    /// opted out gets `.optedOut` (C callers also get zeros in their buffer).
    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.openUDID(for:)'")
    public func openUDID(for appID: String) throws(DeviceIDError) -> StableID {
        try Names.validate(appID, "app id")
        if try settings().read(Self.optOut(appID)) {
            throw DeviceIDError(.optedOut, "'\(appID)' opted out of OpenUDID")
        }
        return try identifier(Scope.openUDID.key(""))
    }

    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.setOpenUDIDOptOut(_:for:)'")
    public func setOpenUDIDOptOut(_ optedOut: Bool, for appID: String) throws(DeviceIDError) {
        try Names.validate(appID, "app id")
        try settings().write(Self.optOut(appID), optedOut)
    }

    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.isOpenUDIDOptedOut(_:)'")
    public func isOpenUDIDOptedOut(_ appID: String) throws(DeviceIDError) -> Bool {
        try Names.validate(appID, "app id")
        return try settings().read(Self.optOut(appID))
    }

    /// Forgets the shared OpenUDID: every app gets a new one.
    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.resetOpenUDID()'")
    public func resetOpenUDID() throws(DeviceIDError) {
        try resetIdentifier(Scope.openUDID.key(""))
    }

    /// The identifier of a scope by number, for the C ABI: `name` is the app id (app, OpenUDID),
    /// the vendor id (vendor), or ignored (advertising).
    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.identifier(scope:name:)'")
    public func identifier(scope: Scope, name: String?) throws(DeviceIDError) -> StableID {
        switch scope {
        case .app: return try stableID(for: name ?? "")
        case .vendor: return try vendorID(for: name ?? "")
        case .advertising: return try advertisingID()
        case .openUDID: return try openUDID(for: name ?? "")
        }
    }

    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.resetIdentifier(scope:name:)'")
    public func resetIdentifier(scope: Scope, name: String?) throws(DeviceIDError) {
        switch scope {
        case .app: try reset(appID: name ?? "")
        case .vendor: try resetVendorID(for: name ?? "")
        case .advertising: try resetAdvertisingID()
        case .openUDID: try resetOpenUDID()
        }
    }
}
