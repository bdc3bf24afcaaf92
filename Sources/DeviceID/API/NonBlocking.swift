#if !hasFeature(Embedded)
import CDeviceIDLibc

extension DeviceIdentity {
    /// The calls that may wait on the keyring (up to the deadline, or the person in interactive
    /// mode), as `async` functions for GUI main actors and server event loops:
    ///
    ///     let id = try await DeviceIdentity.shared.nonblocking.stableID(for: "com.example.app")
    ///
    /// The waiting happens on a thread of its own, never on a thread of Swift's cooperative pool
    /// (which has as many threads as cores); an answer already in memory returns at once. Task
    /// cancellation does not cut a call short: each has its deadline (`timeoutMilliseconds`).
    public var nonblocking: NonBlocking { NonBlocking(identity: self) }

    public struct NonBlocking: Sendable {
        let identity: DeviceIdentity

        public func stableID(for appID: String) async throws(DeviceIDError) -> StableID {
            if let cached = identity.cachedIdentifier(Scope.app.key(appID)) {
                return cached
            }
            return try await Self.onOwnThread { [identity] () throws(DeviceIDError) in try identity.stableID(for: appID) }
        }

        public func reset(appID: String) async throws(DeviceIDError) {
            try await Self.onOwnThread { [identity] () throws(DeviceIDError) in try identity.reset(appID: appID) }
        }

        public func identifier(scope: Scope, name: String?) async throws(DeviceIDError) -> StableID {
            try await Self.onOwnThread { [identity] () throws(DeviceIDError) in try identity.identifier(scope: scope, name: name) }
        }

        public func vendorID(for vendorID: String) async throws(DeviceIDError) -> StableID {
            try await identifier(scope: .vendor, name: vendorID)
        }

        public func advertisingID() async throws(DeviceIDError) -> StableID {
            try await identifier(scope: .advertising, name: nil)
        }

        public func openUDID(for appID: String) async throws(DeviceIDError) -> StableID {
            try await identifier(scope: .openUDID, name: appID)
        }

        @discardableResult
        public func storeSecret(_ secret: [UInt8], service: String, account: String) async throws(DeviceIDError)
            -> SecretLocation {
            try await Self.onOwnThread { [identity] () throws(DeviceIDError) in
                try identity.storeSecret(secret, service: service, account: account)
            }
        }

        public func lookupSecret(service: String, account: String) async throws(DeviceIDError) -> [UInt8]? {
            try await Self.onOwnThread { [identity] () throws(DeviceIDError) in
                try identity.lookupSecret(service: service, account: account)
            }
        }

        public func deleteSecret(service: String, account: String) async throws(DeviceIDError) -> Bool {
            try await Self.onOwnThread { [identity] () throws(DeviceIDError) in
                try identity.deleteSecret(service: service, account: account)
            }
        }

        /// `DeviceIdentity.environment()`: asks the Secret portal (in a sandbox) and the keyring.
        public func environment() async throws(DeviceIDError) -> EnvironmentReport {
            try await Self.onOwnThread { [identity] () throws(DeviceIDError) in try identity.environment() }
        }

        /// Runs `body` on a new detached thread and resumes the caller with its result. Where no
        /// thread can be started (a thread limit), the call fails with `.noMemory` rather than
        /// block a pool thread.
        static func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws(DeviceIDError) -> T)
            async throws(DeviceIDError) -> T {
            let result: Result<T, DeviceIDError> = await withCheckedContinuation { continuation in
                let started = Threads.detach {
                    continuation.resume(returning: Result { () throws(DeviceIDError) in try body() })
                }
                if !started {
                    continuation.resume(returning: .failure(DeviceIDError(.noMemory, "cannot start a thread for the call")))
                }
            }
            return try result.get()
        }
    }
}
#endif
