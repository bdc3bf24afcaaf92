/// A D-Bus value as the Secret Service exchanges it, independent of the client library that
/// carries it (`SecretServiceTransport`): the logic builds and reads these; each transport only
/// converts them to and from its own messages (GVariant, libdbus iterators).
indirect enum DBusValue {
    case string(String)
    case objectPath(String)
    case boolean(Bool)
    /// `u` (a portal's response code)
    case uint32(UInt32)
    case uint64(UInt64)
    /// `ay`
    case bytes([UInt8])
    /// `a…` of elements with signature `element` (needed when the array is empty).
    case array(element: String, [DBusValue])
    /// `a{kv}`: key signature, value signature, entries.
    case dictionary(key: String, value: String, [(DBusValue, DBusValue)])
    /// `(…)`
    case structure([DBusValue])
    /// `v`
    case variant(DBusValue)
    /// `h`: a file descriptor to send (the transport duplicates it; the caller keeps and closes
    /// its own). Only sent: the Secret portal's `RetrieveSecret` writes its answer to one.
    case unixFD(Int32)
    /// A secret `(oayays)` in the transport's transfer session: encoded (and, where the session
    /// encrypts, encrypted) by the transport when sent, decoded by it when received.
    case secret(TransferredSecret)
    /// A received value of a type DeviceID never uses (its signature); never sent.
    case other(signature: String)

    /// The D-Bus type signature of this value.
    var signature: String {
        switch self {
        case .string: "s"
        case .objectPath: "o"
        case .boolean: "b"
        case .uint32: "u"
        case .uint64: "t"
        case .bytes: "ay"
        case .array(let element, _): "a" + element
        case .dictionary(let key, let value, _): "a{" + key + value + "}"
        case .structure(let fields): "(" + fields.map { $0.signature }.joined() + ")"
        case .variant: "v"
        case .unixFD: "h"
        case .secret: TransferredSecret.signature
        case .other(let signature): signature
        }
    }

    /// Whether a descriptor is among the values (the call then needs a descriptor list).
    var carriesDescriptor: Bool {
        switch self {
        case .unixFD: true
        case .array(_, let items), .structure(let items): items.contains { $0.carriesDescriptor }
        case .dictionary(_, _, let pairs): pairs.contains { $0.0.carriesDescriptor || $0.1.carriesDescriptor }
        case .variant(let inner): inner.carriesDescriptor
        default: false
        }
    }

    // MARK: Reading, strictly by type: a value of another type is nil, never a guess.

    var string: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// An object path, only when the value is one and its syntax is valid (`DBusSyntax`).
    var objectPath: String? {
        if case .objectPath(let path) = self, DBusSyntax.isObjectPath(path) { return path }
        return nil
    }

    var boolean: Bool? {
        if case .boolean(let flag) = self { return flag }
        return nil
    }

    var uint32: UInt32? {
        if case .uint32(let number) = self { return number }
        return nil
    }

    var uint64: UInt64? {
        if case .uint64(let number) = self { return number }
        return nil
    }

    /// The value inside a variant (other values as they are).
    var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner }
        return self
    }

    /// `ao`: nil unless every element is a valid object path.
    var objectPaths: [String]? {
        guard case .array(_, let elements) = self else { return nil }
        var out = [String]()
        for element in elements {
            guard let path = element.objectPath else { return nil }
            out.append(path)
        }
        return out
    }

    /// The entries of a dictionary whose keys are strings or object paths.
    var entries: [(key: String, value: DBusValue)]? {
        guard case .dictionary(_, _, let pairs) = self else { return nil }
        var out = [(key: String, value: DBusValue)]()
        for (key, value) in pairs {
            switch key {
            case .string(let text), .objectPath(let text): out.append((text, value))
            default: return nil
            }
        }
        return out
    }

    /// `a{ss}` as a Swift dictionary.
    var stringDictionary: [String: String]? {
        guard let entries else { return nil }
        var out = [String: String]()
        for (key, value) in entries {
            guard let text = value.string else { return nil }
            out[key] = text
        }
        return out
    }

    // MARK: Building

    static func strings(_ values: [String]) -> [DBusValue] { values.map { .string($0) } }

    /// `a{ss}`
    static func attributes(_ pairs: [(String, String)]) -> DBusValue {
        .dictionary(key: "s", value: "s", pairs.map { (.string($0.0), .string($0.1)) })
    }

    /// `ao`
    static func paths(_ paths: [String]) -> DBusValue {
        .array(element: "o", paths.map { .objectPath($0) })
    }
}

/// A secret crossing the bus, held in one place and wiped when released.
final class TransferredSecret {
    static let signature = "(oayays)"

    /// The transfer session's object path.
    let session: String
    private(set) var bytes: [UInt8]
    let contentType: String

    init(session: String, bytes: [UInt8], contentType: String) {
        self.session = session
        self.bytes = bytes
        self.contentType = contentType
    }

    /// The secret's bytes, handed over: this holder is wiped.
    func take() -> [UInt8] {
        let out = bytes
        bytes = []
        return out
    }

    deinit { wipe(&bytes) }
}

/// Reading a reply's arguments by position.
extension Array where Element == DBusValue {
    subscript(safe index: Int) -> DBusValue? { index < count ? self[index] : nil }
}
