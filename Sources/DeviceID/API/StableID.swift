/// An identifier DeviceID keeps, with where it came from and how far to trust it.
public struct StableID: Sendable, Hashable, CustomStringConvertible {
    /// Where the answer came from. The raw values are the C ABI's `DEVICEID_SOURCE_*`.
    public enum Source: Int32, Sendable, CustomStringConvertible {
        /// Read from the Secret Service, or from the file mirror it confirmed (`Flags.mirrored`).
        case keyring = 1
        /// Read from the file store.
        case file = 2
        /// Minted by this call: no store had one.
        case created = 3
        /// Derived, in a sandbox, from the Secret portal's secret for the app (`location` is
        /// `.portal`): nothing is stored; the same after the app's data is removed.
        case portal = 4

        public var description: String { staticName.description }

        init(_ origin: IdentifierKeeper.Origin) {
            switch origin {
            case .keyring: self = .keyring
            case .file: self = .file
            case .created: self = .created
            }
        }

        /// The name in static storage, for C callers.
        public var staticName: StaticString {
            switch self {
            case .keyring: "keyring"
            case .file: "file"
            case .created: "created"
            case .portal: "portal"
            }
        }
    }

    /// Facts about an answer. The raw values are the C ABI's `DEVICEID_FLAG_*`.
    public struct Flags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// The ID was stored on another machine (a cloned image, a restored backup): the machine
        /// fingerprint kept with it no longer matches. The ID still comes back; `reset` re-mints.
        public static let deviceChanged = Flags(rawValue: 1 << 0)
        /// Not known to be unique to this device: no machine ID to bind it to, a locally
        /// administered MAC, a shared fallback.
        public static let weak = Flags(rawValue: 1 << 1)
        /// Advertising tracking is limited: the ID reads as all zeros.
        public static let limited = Flags(rawValue: 1 << 2)
        /// Kept only in the file store: the keyring answered but refused or failed to store the ID
        /// (locked, no default collection, an error; `keyringFailure` says which). The ID is
        /// good; the next call tries the keyring again.
        public static let fileOnly = Flags(rawValue: 1 << 3)

        /// One store held a corrupt copy of the ID, and it was replaced with the other store's
        /// valid copy (the same ID). Said once, by the call that repaired it.
        public static let repaired = Flags(rawValue: 1 << 4)

        /// In `auto`, answered by the file mirror without D-Bus: the keyring was seen holding the
        /// same ID less than `Configuration.mirrorRecheckSeconds` ago (the source is `.keyring`).
        public static let mirrored = Flags(rawValue: 1 << 5)

        /// In `auto`, kept only in the file store while no keyring could be asked, and never
        /// confirmed by one: a keyring that later answers with another ID for the same key wins
        /// (docs/STATE.md, I1). Use the `file` backend where no keyring will ever be.
        public static let provisional = Flags(rawValue: 1 << 6)

        /// Kept only in a sandboxed app's own data (`location` is `.appData`): removing the app's
        /// data (`flatpak uninstall --delete-data`, `snap remove`) removes it. Given where no
        /// Secret portal answers, and for vendor, advertising and OpenUDID IDs in a sandbox.
        public static let appDataOnly = Flags(rawValue: 1 << 7)

        /// In a sandbox, the Secret portal answered with another secret for the app than the one
        /// the mirrored ID was derived from (the host's keyring item replaced or restored): this
        /// ID, derived from the new secret, differs from the one answered before. Said once, by
        /// the call that saw the change (docs/STATE.md, "In a sandbox").
        public static let anchorChanged = Flags(rawValue: 1 << 8)

        /// Answers with these flags may change on the next call, so they are not remembered. (A
        /// provisional answer is: it changes only when a keyring appears, not from call to call.)
        public static let unsettled: Flags = [.fileOnly, .repaired, .anchorChanged]
    }

    public let id: ID128
    public let source: Source
    public let flags: Flags
    /// Why the keyring does not hold the ID, when `flags` has `.fileOnly`.
    public let keyringFailure: DeviceIDError?
    /// Where the ID lives, and so what takes it away (docs/ENVIRONMENTS.md "What survives what").
    public let location: StorageLocation

    public init(id: ID128, source: Source, flags: Flags = [], keyringFailure: DeviceIDError? = nil,
                location: StorageLocation = .host) {
        self.id = id
        self.source = source
        self.flags = flags
        self.keyringFailure = keyringFailure
        self.location = location
    }

    /// A provisional answer given while a keyring that is there could not answer (locked, frozen):
    /// the next call asks it again instead of answering from memory.
    var awaitsKeyring = false

    /// Whether the process may answer from memory next time (see `Flags.unsettled`).
    public var isSettled: Bool { flags.isDisjoint(with: .unsettled) && !awaitsKeyring }
    /// See `Flags.provisional`.
    public var isProvisional: Bool { flags.contains(.provisional) }

    public var uuidString: String { id.uuidString }
    public var description: String { id.uuidString }
    public var deviceChanged: Bool { flags.contains(.deviceChanged) }
    public var isWeak: Bool { flags.contains(.weak) }
}
