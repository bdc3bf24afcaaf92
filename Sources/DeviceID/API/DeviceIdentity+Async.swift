#if !hasFeature(Embedded)
extension DeviceIdentity {
    // The calls that may wait on the keyring, as `async` overloads of the same names. Swift
    // allows a synchronous and an asynchronous function of one signature (SE-0296): from
    // synchronous code the blocking form is chosen, from an `async` context this one — so
    // `try await identity.stableID(for:)` never blocks a thread of the cooperative pool. Each
    // is `nonblocking`'s call (the wait happens on a thread of its own; an answer in memory
    // returns at once; cancellation does not cut a call short, its deadline does).

    public func stableID(for appID: String) async throws(DeviceIDError) -> StableID {
        try await nonblocking.stableID(for: appID)
    }

    public func reset(appID: String) async throws(DeviceIDError) {
        try await nonblocking.reset(appID: appID)
    }

    public func identifier(scope: Scope, name: String?) async throws(DeviceIDError) -> StableID {
        try await nonblocking.identifier(scope: scope, name: name)
    }

    @discardableResult
    public func storeSecret(_ secret: [UInt8], service: String, account: String) async throws(DeviceIDError)
        -> SecretLocation {
        try await nonblocking.storeSecret(secret, service: service, account: account)
    }

    @discardableResult
    public func storeSecret(_ secret: String, service: String, account: String) async throws(DeviceIDError)
        -> SecretLocation {
        try await DeviceIdentity.NonBlocking.onOwnThread { [self] () throws(DeviceIDError) in
            try self.storeSecret(secret, service: service, account: account)
        }
    }

    public func lookupSecret(service: String, account: String) async throws(DeviceIDError) -> [UInt8]? {
        try await nonblocking.lookupSecret(service: service, account: account)
    }

    public func lookupSecretString(service: String, account: String) async throws(DeviceIDError) -> String? {
        try await DeviceIdentity.NonBlocking.onOwnThread { [self] () throws(DeviceIDError) in
            try self.lookupSecretString(service: service, account: account)
        }
    }

    @discardableResult
    public func deleteSecret(service: String, account: String) async throws(DeviceIDError) -> Bool {
        try await nonblocking.deleteSecret(service: service, account: account)
    }
}
#endif
