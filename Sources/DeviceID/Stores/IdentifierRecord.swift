/// One persisted identifier, as stored in both the keyring and the file store.
///
/// Text, so that `secret-tool lookup service deviceid.app username APP` prints something a person
/// can read:
///
///     1b4e28ba-2fa1-4d2b-883f-0016d3cca427
///     created=1764425600
///     machine=9f0c…(32 hex digits)
///
/// The first line is the canonical lowercase UUID. Optional `key=value` lines follow; `created`
/// (seconds since the epoch) settles which copy wins when two stores disagree, `machine` is the
/// fingerprint of the machine the record was made on (never the raw machine ID). Unknown keys are
/// kept for newer versions; anything malformed makes the whole record corrupt.
struct IdentifierRecord: Equatable, Sendable {
    var id: ID128
    var created: UInt64?
    var machine: [UInt8]?
    var extra: [(String, String)] = []

    static func == (a: IdentifierRecord, b: IdentifierRecord) -> Bool {
        a.id == b.id && a.created == b.created && a.machine == b.machine
            && a.extra.map(\.0) == b.extra.map(\.0) && a.extra.map(\.1) == b.extra.map(\.1)
    }

    /// Upper bound of a record's size; larger stored values are corrupt by definition.
    static let maximumSize = 4096

    func serialized() -> [UInt8] {
        var text = id.uuidString + "\n"
        if let created { text += "created=\(created)\n" }
        if let machine { text += "machine=\(Hex.encode(machine))\n" }
        for (key, value) in extra { text += "\(key)=\(value)\n" }
        return Array(text.utf8)
    }

    init(id: ID128, created: UInt64?, machine: [UInt8]? = nil) {
        self.id = id
        self.created = created
        self.machine = machine
    }

    /// Parses a stored record; throws `.corrupt` for anything that is not exactly this format.
    init(parsing bytes: [UInt8]) throws(DeviceIDError) {
        guard bytes.count <= Self.maximumSize else {
            throw DeviceIDError(.corrupt, "stored identifier record is \(bytes.count) bytes")
        }
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        // One optional trailing newline.
        if lines.last?.isEmpty == true { lines.removeLast() }
        guard let first = lines.first, first.count == ID128.stringLength,
              let id = ID128(parsingUTF8: Array(first)), id.uuidString.utf8.elementsEqual(first)
        else {
            throw DeviceIDError(.corrupt, "stored identifier is not a canonical lowercase UUID")
        }
        self.id = id
        var seen = Set<String>()
        for line in lines.dropFirst() {
            guard let eq = line.firstIndex(of: UInt8(ascii: "=")) else {
                throw DeviceIDError(.corrupt, "stored identifier record has a line without '='")
            }
            let keyBytes = line[line.startIndex..<eq]
            let valueBytes = line[line.index(after: eq)...]
            guard !keyBytes.isEmpty,
                  keyBytes.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || $0 == UInt8(ascii: "-") }),
                  valueBytes.allSatisfy({ $0 >= 0x21 && $0 < 0x7F })
            else {
                throw DeviceIDError(.corrupt, "stored identifier record has a malformed line")
            }
            let key = String(decoding: keyBytes, as: UTF8.self)
            let value = String(decoding: valueBytes, as: UTF8.self)
            guard seen.insert(key).inserted else {
                throw DeviceIDError(.corrupt, "stored identifier record repeats '\(key)'")
            }
            switch key {
            case "created":
                guard !valueBytes.isEmpty, valueBytes.count <= 20, let n = UInt64(value) else {
                    throw DeviceIDError(.corrupt, "stored identifier record has a malformed creation time")
                }
                created = n
            case "machine":
                guard valueBytes.count == 32, let raw = Hex.decode(valueBytes) else {
                    throw DeviceIDError(.corrupt, "stored identifier record has a malformed machine fingerprint")
                }
                machine = raw
            default:
                extra.append((key, value))
            }
        }
    }

    /// Of two copies of one identifier found in two stores, the one to keep: the older, so that
    /// an ID that was handed out first is never replaced by a later one; on a tie, `self`.
    func preferred(over other: IdentifierRecord) -> IdentifierRecord {
        switch (created, other.created) {
        case let (a?, b?): return b < a ? other : self
        case (nil, _?): return other
        default: return self
        }
    }
}
