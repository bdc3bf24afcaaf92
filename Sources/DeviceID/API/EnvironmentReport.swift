/// Where this process runs and what survives what there (docs/ENVIRONMENTS.md "Sandboxes and
/// containers"): what `deviceid doctor` prints under "environment", `deviceid_environment_*()`
/// in C and `deviceid.environment()` in Python.
public struct EnvironmentReport: Sendable {
    /// What the Secret portal said. The raw values are the C ABI's `DEVICEID_PORTAL_*`.
    public enum PortalState: Int32, Sendable, CustomStringConvertible {
        /// Not in a sandbox, or the secret-service backend: the portal is not asked.
        case notAsked = 0
        /// It gave this app its secret: stable IDs are derived from it, secrets in files sealed.
        case secret = 1
        /// Positively none: no portal, or one without a Secret back end.
        case absent = 2
        /// It could not answer (a back end that failed, a timeout): nothing is minted over it (an
        /// ID already kept answers; without one, getting the app's stable ID fails).
        case failed = 3

        public var description: String { staticName.description }

        public var staticName: StaticString {
            switch self {
            case .notAsked: "not-asked"
            case .secret: "secret"
            case .absent: "absent"
            case .failed: "failed"
            }
        }
    }

    /// What this-device-only is bound to here (docs/STATE.md, "Protection classes"). The raw
    /// values are the C ABI's `DEVICEID_BINDING_*`.
    public enum Binding: Int32, Sendable, CustomStringConvertible {
        /// Portable: nothing is sealed; records and secrets travel with the home.
        case none = 0
        /// This-device-only, sealed to this machine's TPM.
        case tpm = 1
        /// This-device-only, and no TPM can seal here: what would be sealed is refused.
        case refused = 2
        /// This-device-only+pcr7, sealed to this machine's TPM and to PCR 7 as it is now.
        case tpmPCR7 = 3

        public var description: String {
            switch self {
            case .none: "none"
            case .tpm: "tpm"
            case .refused: "refused"
            case .tpmPCR7: "tpm+pcr7"
            }
        }
    }

    public let surroundings: Surroundings
    public let portal: PortalState
    /// Why the portal state is what it is ("" when not asked).
    public let portalDetail: String
    /// The file store's directory.
    public let storePath: String
    /// Where files in the store live.
    public let storeLocation: StorageLocation
    /// Where an app's stable ID is kept here when no store holds one yet: the portal, the keyring,
    /// or the file store.
    public let stableIDLocation: StorageLocation
    /// The protection class in force, and the binding that gives it here, in words.
    public let protection: Configuration.Protection
    public let binding: Binding
    public let bindingDetail: String
}

extension DeviceIdentity {
    /// Detects the surroundings, asks the Secret portal (in a sandbox, auto backend) and the
    /// keyring whether they answer, and says where the stores live. Asks, never writes.
    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.environment()'")
    public func environment() throws(DeviceIDError) -> EnvironmentReport {
        let configuration = try self.configuration()
        let stores = try configuration.stores()
        let surroundings = Surroundings.current()
        let storeLocation = surroundings.location(ofFilesIn: stores.lock.path)
        var portal = EnvironmentReport.PortalState.notAsked
        var detail = ""
        // Asked where the files take part (auto: stable IDs and sealed secrets; file: sealed secrets).
        if surroundings.sandbox != nil, configuration.backend != .secretService {
            do {
                switch try SandboxAnchor.ask(timeoutMilliseconds: configuration.timeoutMilliseconds) {
                case .anchored?:
                    portal = .secret
                    detail = "the Secret portal gives this app its secret, which the host's keyring keeps"
                case .absent(let why)?:
                    portal = .absent
                    detail = why
                case nil:
                    break
                }
            } catch {
                portal = .failed
                detail = error.description
            }
        }
        let stableIDLocation: StorageLocation
        if portal == .secret && configuration.backend == .auto {
            stableIDLocation = .portal
        } else if stores.keyring != nil, Self.keyringAnswers(stores) {
            stableIDLocation = .keyring
        } else {
            stableIDLocation = storeLocation
        }
        let (binding, bindingDetail) = Self.binding(stores)
        return EnvironmentReport(surroundings: surroundings, portal: portal, portalDetail: detail,
                                 storePath: stores.lock.path, storeLocation: storeLocation,
                                 stableIDLocation: stableIDLocation, protection: configuration.protection,
                                 binding: binding, bindingDetail: bindingDetail)
    }

    /// Which binding this-device-only has here: the TPM is asked for its binding key (no secret
    /// is made or kept), or says why it cannot seal.
    static func binding(_ stores: Stores) -> (EnvironmentReport.Binding, String) {
        guard stores.protection == .thisDeviceOnly else {
            return (.none, "portable: records and secrets travel with the home (a copy reads the same ID elsewhere)")
        }
        do {
            let (key, pcr7) = try stores.binding.keyPoint(at: try TPMAddress.resolvedWithPin())
            let tpm = "sealed to this machine's TPM (binding key " + Hex.encode(Array(SHA256.hash(key).prefix(8)))
            guard stores.binding.pcr7 else {
                return (.tpm, tpm + "); another machine, or this one after tpm2_clear, reads COPIED")
            }
            return (.tpmPCR7, tpm + ") and to its Secure Boot state, PCR 7 = " + Hex.encode(pcr7)
                    + " (SHA-256) now; another machine, this one after tpm2_clear, or a PCR 7 other than at sealing "
                    + "reads COPIED")
        } catch {
            return (.refused, "this-device-only refuses to write here: no TPM can seal (\(error.description)); "
                    + "no host-bound key is used in its place")
        }
    }

    /// The file store's directory and where its files live, without asking the portal or the
    /// keyring.
    public func store() throws(DeviceIDError) -> (path: String, location: StorageLocation) {
        let path = try configuration().stores().lock.path
        return (path, Surroundings.current().location(ofFilesIn: path))
    }

    /// Whether the keyring is there to keep IDs (it answers, or is there and cannot answer now).
    private static func keyringAnswers(_ stores: Stores) -> Bool {
        let probe = StoreKey.identifier(scope: "doctor", name: "environment")
        switch stores.ask(keyring: { (keyring) throws(DeviceIDError) in try keyring.read(probe) }) {
        case .found, .empty, .failed: return true
        case .unreachable, .notConfigured: return false
        }
    }
}
