#if !hasFeature(Embedded)
import CDeviceIDLibc

extension DeviceIdentity {
    /// Every call that may wait — on the keyring (up to the deadline, or the person in interactive
    /// mode), the Secret portal or the TPM — as an `async` function, for GUI main actors, server
    /// event loops and top-level code:
    ///
    ///     do {
    ///         let id = try await DeviceIdentity.shared.nonblocking.stableID(for: "com.example.app")
    ///     } catch let error as DeviceIDError {
    ///         switch error.code { case .locked: …; default: … }
    ///     }
    ///
    /// The one async surface: its functions have names of their own receiver, so that the
    /// compiler never picks a blocking overload in async code (top-level code with `await` did,
    /// with async overloads of the blocking names). They throw only `DeviceIDError`, declared as
    /// untyped `throws` on purpose: Swift 6.3.1 crashes compiling top-level code that catches a
    /// typed-throws async call with `catch let error as DeviceIDError` ("Found outside of lifetime
    /// use", SILGenCleanup in `async_Main`), which is the code people write first; the blocking
    /// surface keeps `throws(DeviceIDError)`, which Embedded Swift needs.
    ///
    /// The waiting happens on a thread of its own, never on a thread of Swift's cooperative pool
    /// (which has as many threads as cores); an answer already in memory returns at once. Task
    /// cancellation does not cut a call short: each has its deadline (`timeoutMilliseconds`).
    public var nonblocking: NonBlocking { NonBlocking(identity: self) }

    public struct NonBlocking: Sendable {
        let identity: DeviceIdentity

        /// `body` with the identity, on a thread of its own.
        private func run<T: Sendable>(_ body: @escaping @Sendable (DeviceIdentity) throws(DeviceIDError) -> T) async throws -> T {
            let identity = self.identity
            return try await Self.onOwnThread { () throws(DeviceIDError) in try body(identity) }
        }

        public func stableID(for appID: String) async throws -> StableID {
            if let cached = identity.cachedIdentifier(Scope.app.key(appID)) { return cached }
            return try await run { (identity) throws(DeviceIDError) in try identity.stableID(for: appID) }
        }

        public func reset(appID: String) async throws {
            try await run { (identity) throws(DeviceIDError) in try identity.reset(appID: appID) }
        }

        public func identifier(scope: Scope, name: String?) async throws -> StableID {
            try await run { (identity) throws(DeviceIDError) in try identity.identifier(scope: scope, name: name) }
        }

        public func resetIdentifier(scope: Scope, name: String?) async throws {
            try await run { (identity) throws(DeviceIDError) in try identity.resetIdentifier(scope: scope, name: name) }
        }

        public func vendorID(for vendorID: String) async throws -> StableID {
            try await identifier(scope: .vendor, name: vendorID)
        }

        public func resetVendorID(for vendorID: String) async throws {
            try await resetIdentifier(scope: .vendor, name: vendorID)
        }

        public func advertisingID() async throws -> StableID {
            try await identifier(scope: .advertising, name: nil)
        }

        public func resetAdvertisingID() async throws {
            try await resetIdentifier(scope: .advertising, name: nil)
        }

        public func setAdvertisingTrackingLimited(_ limited: Bool) async throws {
            try await run { (identity) throws(DeviceIDError) in try identity.setAdvertisingTrackingLimited(limited) }
        }

        public func isAdvertisingTrackingLimited() async throws -> Bool {
            try await run { (identity) throws(DeviceIDError) in try identity.isAdvertisingTrackingLimited() }
        }

        public func openUDID(for appID: String) async throws -> StableID {
            try await identifier(scope: .openUDID, name: appID)
        }

        public func setOpenUDIDOptOut(_ optedOut: Bool, for appID: String) async throws {
            try await run { (identity) throws(DeviceIDError) in try identity.setOpenUDIDOptOut(optedOut, for: appID) }
        }

        public func isOpenUDIDOptedOut(_ appID: String) async throws -> Bool {
            try await run { (identity) throws(DeviceIDError) in try identity.isOpenUDIDOptedOut(appID) }
        }

        public func resetOpenUDID() async throws {
            try await resetIdentifier(scope: .openUDID, name: nil)
        }

        @discardableResult
        public func storeSecret(_ secret: [UInt8], service: String, account: String) async throws -> SecretLocation {
            try await run { (identity) throws(DeviceIDError) in try identity.storeSecret(secret, service: service, account: account) }
        }

        @discardableResult
        public func storeSecret(_ secret: String, service: String, account: String) async throws -> SecretLocation {
            try await run { (identity) throws(DeviceIDError) in try identity.storeSecret(secret, service: service, account: account) }
        }

        public func lookupSecret(service: String, account: String) async throws -> [UInt8]? {
            try await run { (identity) throws(DeviceIDError) in try identity.lookupSecret(service: service, account: account) }
        }

        public func lookupSecretString(service: String, account: String) async throws -> String? {
            try await run { (identity) throws(DeviceIDError) in try identity.lookupSecretString(service: service, account: account) }
        }

        @discardableResult
        public func deleteSecret(service: String, account: String) async throws -> Bool {
            try await run { (identity) throws(DeviceIDError) in try identity.deleteSecret(service: service, account: account) }
        }

        /// `DeviceIdentity.environment()`: asks the Secret portal (in a sandbox) and the keyring.
        public func environment() async throws -> EnvironmentReport {
            try await run { (identity) throws(DeviceIDError) in try identity.environment() }
        }

        public func hardwareID(for appID: String) async throws -> ID128 {
            try await run { (identity) throws(DeviceIDError) in try identity.hardwareID(for: appID) }
        }

        public func attestationEnrolment(for appID: String) async throws -> String {
            try await run { (identity) throws(DeviceIDError) in try identity.attestationEnrolment(for: appID) }
        }

        public func attestationActivation(for appID: String, challenge: String) async throws -> String {
            try await run { (identity) throws(DeviceIDError) in try identity.attestationActivation(for: appID, challenge: challenge) }
        }

        public func attestation(for appID: String, nonce: [UInt8], akCertificate: String? = nil) async throws -> String {
            try await run { (identity) throws(DeviceIDError) in
                try identity.attestation(for: appID, nonce: nonce, akCertificate: akCertificate)
            }
        }

        public func webAuthnAttestation(for appID: String, clientDataHash: [UInt8], akCertificate: String) async throws -> String {
            try await run { (identity) throws(DeviceIDError) in
                try identity.webAuthnAttestation(for: appID, clientDataHash: clientDataHash, akCertificate: akCertificate)
            }
        }

        public func webAuthnAssertion(for appID: String, clientDataHash: [UInt8]) async throws -> String {
            try await run { (identity) throws(DeviceIDError) in try identity.webAuthnAssertion(for: appID, clientDataHash: clientDataHash) }
        }

        public func lookupSecretAndLocation(service: String, account: String) async throws
            -> (value: [UInt8], location: SecretLocation)? {
            try await run { (identity) throws(DeviceIDError) in try identity.lookupSecretAndLocation(service: service, account: account) }
        }

        /// What `deviceid doctor` reports; it converses with the keyring, so it waits as the others do.
        public func diagnose() async throws -> Diagnosis {
            try await run { (identity) throws(DeviceIDError) in identity.diagnose() }
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
