/// Where DeviceID keeps things and how long it waits for them.
public struct Configuration: Sendable, Equatable {
    /// Which stores take part. The raw values are the C ABI's `DEVICEID_BACKEND_*`.
    public enum Backend: Int32, Sendable, CaseIterable, CustomStringConvertible {
        /// The keyring when a Secret Service answers, and the file store always; identifiers are
        /// kept in both.
        case auto = 0
        /// Only the Secret Service; unavailable is an error, never a silent fallback.
        case secretService = 1
        /// Only the file store.
        case file = 2

        /// The name used by `DEVICEID_BACKEND` and the CLI's `--backend`.
        public var description: String {
            switch self {
            case .auto: "auto"
            case .secretService: "secret-service"
            case .file: "file"
            }
        }

        public init?(name: String) {
            guard let backend = Self.allCases.first(where: { $0.description == name }) else { return nil }
            self = backend
        }
    }

    /// What a copied home carries (docs/STATE.md, "Protection classes"), as a Keychain item's
    /// accessibility says. The raw values are the C ABI's `DEVICEID_PROTECTION_*`.
    public enum Protection: Int32, Sendable, CaseIterable, CustomStringConvertible {
        /// Records travel with the home (what every version before wrote): the default.
        case portable = 0
        /// Records and secrets are sealed to this machine's TPM: another machine, or this one
        /// after `tpm2_clear`, reads `.copied`. Without a usable TPM, refused with the TPM's status.
        case thisDeviceOnly = 1
        /// As `.thisDeviceOnly`, and bound to PCR 7 (the Secure Boot state) as well, as
        /// systemd-creds' `--tpm2-pcrs=7`: once PCR 7 changes, what was sealed reads `.copied`
        /// until it returns. Without a SHA-256 PCR bank, refused (`.unsupported`).
        case thisDeviceOnlyPCR7 = 2

        /// The name used by `DEVICEID_PROTECTION` and the CLI's `--protection`.
        public var description: String {
            switch self {
            case .portable: "portable"
            case .thisDeviceOnly: "this-device-only"
            case .thisDeviceOnlyPCR7: "this-device-only+pcr7"
            }
        }

        /// Every class's name, for words: "portable, this-device-only, this-device-only+pcr7".
        public static var names: String { allCases.map { $0.description }.joined(separator: ", ") }

        public init?(name: String) {
            guard let protection = Self.allCases.first(where: { $0.description == name }) else { return nil }
            self = protection
        }
    }

    public static let defaultTimeoutMilliseconds: UInt32 = 5000
    /// How long an interactive call waits for the person to answer an unlock or confirmation.
    public static let defaultInteractiveTimeoutMilliseconds: UInt32 = 120_000
    /// The longest deadline accepted, a day; longer ones are surely mistakes.
    public static let maximumTimeoutMilliseconds: UInt32 = 86_400_000
    /// How long the file mirror's confirmation stands: a day (see `mirrorRecheckSeconds`).
    public static let defaultMirrorRecheckSeconds: UInt32 = Stores.defaultMirrorRecheckSeconds
    /// The longest re-check interval accepted, 30 days.
    public static let maximumMirrorRecheckSeconds: UInt32 = 2_592_000

    public var backend: Backend
    /// The deadline of each conversation with the Secret Service.
    public var timeoutMilliseconds: UInt32
    /// The file store's directory (`DEVICEID_STORE_DIR` in the environment); nil for the default
    /// (`StoreDirectory.defaultLocation`).
    public var storeDirectory: String?
    /// Interactive mode, for desktop apps: the Secret Service may show unlock and confirmation
    /// dialogs, and a call waits up to `interactiveTimeoutMilliseconds` for the person. Off by
    /// default: then no dialog is ever started, and a locked keyring is `.locked` at once.
    public var interactive: Bool
    public var interactiveTimeoutMilliseconds: UInt32
    /// Mirror-first answers, in `auto`: the first lookup of an ID in a process is answered from
    /// the file mirror, without D-Bus, when the keyring was seen holding the same ID less than
    /// this many seconds ago; otherwise the keyring is asked (and, agreeing, renews that). 0
    /// asks the keyring on every first lookup. `DEVICEID_MIRROR_RECHECK_S`; a day by default.
    public var mirrorRecheckSeconds: UInt32
    /// What new and rewritten records and secrets get: `.portable` by default, or sealed to this
    /// machine (`.thisDeviceOnly`). `DEVICEID_PROTECTION`.
    public var protection: Protection = .portable

    public init(backend: Backend = .auto,
                timeoutMilliseconds: UInt32 = Configuration.defaultTimeoutMilliseconds,
                storeDirectory: String? = nil,
                interactive: Bool = false,
                interactiveTimeoutMilliseconds: UInt32 = Configuration.defaultInteractiveTimeoutMilliseconds,
                mirrorRecheckSeconds: UInt32 = Configuration.defaultMirrorRecheckSeconds) {
        self.backend = backend
        self.timeoutMilliseconds = timeoutMilliseconds
        self.storeDirectory = storeDirectory
        self.interactive = interactive
        self.interactiveTimeoutMilliseconds = interactiveTimeoutMilliseconds
        self.mirrorRecheckSeconds = mirrorRecheckSeconds
    }

    /// The stores this configuration puts to work.
    func stores() throws(DeviceIDError) -> Stores {
        let selection: Stores.Selection = switch backend {
        case .auto: .keyringAndFile
        case .secretService: .keyringOnly
        case .file: .fileOnly
        }
        return try Stores(selection, timeoutMilliseconds: timeoutMilliseconds,
                          promptMilliseconds: interactive ? interactiveTimeoutMilliseconds : nil, storeDirectory: storeDirectory,
                          mirrorRecheckSeconds: mirrorRecheckSeconds,
                          protection: protection == .portable ? .portable : .thisDeviceOnly,
                          pcr7: protection == .thisDeviceOnlyPCR7)
    }

    /// Settings given through the API (C, Python, Swift) or the command line. Each one given
    /// replaces the environment's value for that setting — the one rule, applied by
    /// `resolved(_:)` for every caller.
    public struct Overrides: Sendable, Equatable {
        public var backend: Backend?
        public var timeoutMilliseconds: UInt32?
        /// nil: not given, so `$DEVICEID_STORE_DIR` or the default applies.
        public var storeDirectory: String?
        public var interactive: Bool?
        public var interactiveTimeoutMilliseconds: UInt32?
        public var protection: Protection?

        public init() {}

        /// Each value given is valid on its own (the environment is not consulted).
        public func validated() throws(DeviceIDError) -> Overrides {
            var probe = Configuration()
            apply(to: &probe)
            _ = try probe.validated()
            return self
        }

        func apply(to configuration: inout Configuration) {
            if let backend { configuration.backend = backend }
            if let timeoutMilliseconds { configuration.timeoutMilliseconds = timeoutMilliseconds }
            if let storeDirectory { configuration.storeDirectory = storeDirectory }
            if let interactive { configuration.interactive = interactive }
            if let interactiveTimeoutMilliseconds { configuration.interactiveTimeoutMilliseconds = interactiveTimeoutMilliseconds }
            if let protection { configuration.protection = protection }
        }
    }

    /// The configuration `overrides` and the environment ask for: each setting from the override
    /// when given, else from `DEVICEID_BACKEND`, `DEVICEID_TIMEOUT_MS`, `DEVICEID_INTERACTIVE` or
    /// `DEVICEID_STORE_DIR` or `DEVICEID_PROTECTION`, and the re-check interval from `DEVICEID_MIRROR_RECHECK_S` (no
    /// override). An invalid variable is an error only when nothing overrides it. This is the one
    /// place DeviceID's own variables are read; with no store directory set here, the stores pick
    /// the default one (`StoreDirectory.defaultLocation`: systemd's, XDG's, root's, the home's).
    public static func resolved(_ overrides: Overrides = Overrides()) throws(DeviceIDError) -> Configuration {
        var configuration = Configuration()
        if overrides.backend == nil, let name = Environment.value(Environment.backend) {
            guard let backend = Backend(name: name) else {
                throw DeviceIDError(.invalidArgument,
                                    "\(Environment.backend)=\(name) is not one of auto, secret-service, file")
            }
            configuration.backend = backend
        }
        if overrides.timeoutMilliseconds == nil, let text = Environment.value(Environment.timeout) {
            guard let ms = UInt32(text), ms > 0, ms <= maximumTimeoutMilliseconds else {
                throw DeviceIDError(.invalidArgument,
                                    "\(Environment.timeout)=\(text) is not a number of milliseconds from 1 to \(maximumTimeoutMilliseconds)")
            }
            configuration.timeoutMilliseconds = ms
        }
        if overrides.interactive == nil, let text = Environment.value(Environment.interactive) {
            guard text == "0" || text == "1" else {
                throw DeviceIDError(.invalidArgument, "\(Environment.interactive)=\(text) is not 0 or 1")
            }
            configuration.interactive = text == "1"
        }
        if overrides.storeDirectory == nil, let directory = try Environment.path(Environment.storeDirectory) {
            guard directory.hasPrefix("/") else {
                throw DeviceIDError(.invalidArgument, "\(Environment.storeDirectory)=\(directory) is not an absolute path")
            }
            configuration.storeDirectory = directory
        }
        if overrides.protection == nil, let name = Environment.value(Environment.protection) {
            guard let protection = Protection(name: name) else {
                throw DeviceIDError(.invalidArgument, "\(Environment.protection)=\(name) is not one of \(Protection.names)")
            }
            configuration.protection = protection
        }
        if let text = Environment.value(Environment.mirrorRecheck) {
            guard let seconds = UInt32(text), seconds <= maximumMirrorRecheckSeconds else {
                throw DeviceIDError(.invalidArgument, "\(Environment.mirrorRecheck)=\(text) is not a number of "
                                    + "seconds from 0 to \(maximumMirrorRecheckSeconds)")
            }
            configuration.mirrorRecheckSeconds = seconds
        }
        overrides.apply(to: &configuration)
        return try configuration.validated()
    }

    public func validated() throws(DeviceIDError) -> Configuration {
        for ms in [timeoutMilliseconds, interactiveTimeoutMilliseconds] {
            guard ms > 0, ms <= Self.maximumTimeoutMilliseconds else {
                throw DeviceIDError(.invalidArgument, "a timeout must be from 1 to \(Self.maximumTimeoutMilliseconds) ms")
            }
        }
        guard mirrorRecheckSeconds <= Self.maximumMirrorRecheckSeconds else {
            throw DeviceIDError(.invalidArgument, "the mirror re-check interval must be at most "
                                + "\(Self.maximumMirrorRecheckSeconds) seconds")
        }
        if let dir = storeDirectory, !dir.hasPrefix("/") {
            throw DeviceIDError(.invalidArgument, "the store directory must be an absolute path")
        }
        return self
    }
}
