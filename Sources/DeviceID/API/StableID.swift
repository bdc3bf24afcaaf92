/// An identifier DeviceID keeps, with where it came from.
public struct StableID: Sendable, Hashable, CustomStringConvertible {
    /// Where the answer came from. The raw values are the C ABI's `DEVICEID_SOURCE_*`.
    public enum Source: Int32, Sendable, CustomStringConvertible {
        /// Read from the Secret Service.
        case keyring = 1
        /// Read from the file store.
        case file = 2
        /// Minted by this call: no store had one.
        case created = 3

        public var description: String { staticName.description }

        /// The name in static storage, for C callers.
        public var staticName: StaticString {
            switch self {
            case .keyring: "keyring"
            case .file: "file"
            case .created: "created"
            }
        }
    }

    public let id: ID128
    public let source: Source

    public init(id: ID128, source: Source) {
        self.id = id
        self.source = source
    }

    public var uuidString: String { id.uuidString }
    public var description: String { id.uuidString }
}
