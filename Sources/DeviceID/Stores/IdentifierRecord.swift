/// One persisted identifier, as stored in both the keyring and the file store.
///
/// In the file store (and in 0.1.0's keyring items) it is text:
///
///     1b4e28ba-2fa1-4d2b-883f-0016d3cca427
///     created=1764425600
///     machine=9f0c…(32 hex digits)
///     generation=2
///     confirmed=1764512000
///
/// The first line is the canonical lowercase UUID. Optional `key=value` lines follow; `created`
/// (seconds since the epoch) settles which copy wins when two stores disagree, `machine` is the
/// fingerprint of the machine the record was made on (never the raw machine ID), `generation` how
/// many resets came before it (absent: 0, as 0.1.0 and 0.2.0 wrote; see docs/STATE.md). `confirmed`, in
/// the file mirror only, is when the keyring was last seen holding the same ID (written or read
/// back together): what lets the mirror answer without D-Bus (`IdentifierKeeper`). Unknown keys
/// are kept for newer versions (0.1.0 keeps `confirmed` as one); anything malformed makes the
/// whole record corrupt. The keyring keeps the same fields, less `confirmed`, in another shape
/// (`keyringSecret`, `keyringAttributes`).
package struct IdentifierRecord: Equatable, Sendable {
    var id: ID128
    var created: UInt64?
    var machine: [UInt8]?
    /// The reset generation the ID was minted in: a tombstone of a higher generation makes it dead.
    var generation: UInt64 = 0
    /// When the keyring was last seen holding this ID (seconds since the epoch); file mirror only.
    /// A fact about the copy, not the record: equality ignores it.
    var confirmed: UInt64?
    var extra: [(String, String)] = []
    /// This-device-only: kept sealed to this machine's TPM (`SealedIdentifier`). A fact about how
    /// the copy is kept, and part of equality: a plain copy of a sealed record is to be replaced.
    var sealed = false

    package static func == (a: IdentifierRecord, b: IdentifierRecord) -> Bool {
        a.id == b.id && a.created == b.created && a.machine == b.machine && a.generation == b.generation
            && a.sealed == b.sealed && a.extra.elementsEqual(b.extra) { $0.0 == $1.0 && $0.1 == $1.1 }
    }

    /// Generations and setting clocks at or above this are corrupt: one more must never overflow
    /// (2^62: a reset a nanosecond would take 146 years to get there).
    static let generationLimit: UInt64 = 1 << 62

    /// Upper bound of a record's size; larger stored values are corrupt by definition.
    static let maximumSize = 4096

    /// The fields after the ID, as `key=value` lines or keyring attributes carry them.
    var fields: [(String, String)] {
        var out = [(String, String)]()
        if let created { out.append(("created", String(created))) }
        if let machine { out.append(("machine", Hex.encode(machine))) }
        if generation > 0 { out.append(("generation", String(generation))) }
        return out + extra
    }

    /// The text form, kept in the file store (and in the keyring by 0.1.0).
    package func serialized() -> [UInt8] {
        var text = id.uuidString + "\n"
        for (key, value) in fields { text += "\(key)=\(value)\n" }
        if let confirmed { text += "confirmed=\(confirmed)\n" }
        return Array(text.utf8)
    }

    /// This record as the mirror keeps it once the keyring holds the same ID at `time`.
    func confirmed(at time: UInt64) -> IdentifierRecord {
        var copy = self
        copy.confirmed = time
        return copy
    }

    init(id: ID128, created: UInt64?, machine: [UInt8]? = nil, generation: UInt64 = 0) {
        self.id = id
        self.created = created
        self.machine = machine
        self.generation = generation
    }

    /// Parses the text form; throws `.corrupt` for anything that is not exactly this format.
    package init(parsing bytes: [UInt8]) throws(DeviceIDError) {
        guard bytes.count <= Self.maximumSize else {
            throw DeviceIDError(.corrupt, "stored identifier record is \(bytes.count) bytes")
        }
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        // One optional trailing newline.
        if lines.last?.isEmpty == true { lines.removeLast() }
        guard let first = lines.first else {
            throw DeviceIDError(.corrupt, "stored identifier is not a canonical lowercase UUID")
        }
        var fields = [(ArraySlice<UInt8>, ArraySlice<UInt8>)]()
        for line in lines.dropFirst() {
            guard let eq = line.firstIndex(of: UInt8(ascii: "=")) else {
                throw DeviceIDError(.corrupt, "stored identifier record has a line without '='")
            }
            fields.append((line[line.startIndex..<eq], line[line.index(after: eq)...]))
        }
        try self.init(id: Array(first), fields: fields)
    }

    private init(id text: [UInt8], fields: [(ArraySlice<UInt8>, ArraySlice<UInt8>)]) throws(DeviceIDError) {
        guard text.count == ID128.stringLength, let id = ID128(parsingUTF8: text), id.uuidString.utf8.elementsEqual(text)
        else {
            throw DeviceIDError(.corrupt, "stored identifier is not a canonical lowercase UUID")
        }
        // DeviceID mints only version-4 UUIDs; all zeros is the LIMITED/OPTED_OUT sentinel.
        guard !id.isNull, id.version == 4, id.isRFC9562Variant else {
            throw DeviceIDError(.corrupt, "stored identifier is not a version-4 UUID")
        }
        self.id = id
        var seen = Set<String>()
        for (keyBytes, valueBytes) in fields {
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
            case "created", "confirmed", "generation":
                guard !valueBytes.isEmpty, valueBytes.count <= 20, let n = UInt64(value) else {
                    throw DeviceIDError(.corrupt, "stored identifier record has a malformed \(key)")
                }
                switch key {
                case "created": created = n
                case "confirmed": confirmed = n
                default:
                    guard n < Self.generationLimit else {
                        throw DeviceIDError(.corrupt, "stored identifier record has an impossible generation")
                    }
                    generation = n
                }
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

    /// How a record stands to a sandbox's Secret portal (docs/STATE.md, "In a sandbox"), from its
    /// `portal=` field: nil for a record written outside a sandbox or before 0.3.0.
    enum PortalOrigin: String {
        /// The ID derived from the portal's secret, kept as its mirror.
        case anchored
        /// Minted while the portal did not answer: the derived ID replaces it when it does.
        case unanchored
    }

    static let portalField = "portal"

    var portalOrigin: PortalOrigin? {
        extra.first { $0.0 == Self.portalField }.flatMap { PortalOrigin(rawValue: $0.1) }
    }

    // MARK: The keyring form

    /// In the keyring the item's secret is the UUID text alone, so that `secret-tool lookup
    /// service deviceid.app username APP` prints exactly the ID; the other fields are attributes
    /// named with this prefix ("deviceid-created", "deviceid-machine").
    static let attributePrefix = "deviceid-"

    var keyringSecret: [UInt8] { Array(id.uuidString.utf8) }

    var keyringAttributes: [(String, String)] {
        fields.map { (Self.attributePrefix + $0.0, $0.1) }
    }

    /// Reads a keyring item. `isLegacy` is true for 0.1.0's form (the whole text record as the
    /// secret), which is still read and should be rewritten. Attributes of other programs
    /// (`service`, `username`, KeePassXC's `Title`, …) are ignored.
    static func fromKeyring(secret: [UInt8], attributes: [String: String]) throws(DeviceIDError)
        -> (record: IdentifierRecord, isLegacy: Bool) {
        guard secret.count <= maximumSize else {
            throw DeviceIDError(.corrupt, "stored identifier record is \(secret.count) bytes")
        }
        if secret.contains(UInt8(ascii: "\n")) {
            var record = try IdentifierRecord(parsing: secret)
            record.confirmed = nil
            return (record, true)
        }
        let fields = attributes.filter { $0.key.hasPrefix(attributePrefix) }.ordered { $0.key < $1.key }
            .map { (ArraySlice($0.key.utf8.dropFirst(attributePrefix.utf8.count)), ArraySlice($0.value.utf8)) }
        var record = try IdentifierRecord(id: secret, fields: fields)
        record.confirmed = nil  // the mirror's own fact; a keyring item cannot vouch for itself
        return (record, false)
    }

    /// Of two copies of one identifier found in one store (two keyring items), the one to keep:
    /// the later generation (the older one was reset), else the older, so that an ID handed out
    /// first is never replaced by a later one; on a tie, `self`.
    func preferred(over other: IdentifierRecord) -> IdentifierRecord {
        if generation != other.generation { return generation > other.generation ? self : other }
        switch (created, other.created) {
        case let (a?, b?): return b < a ? other : self
        case (nil, _?): return other
        default: return self
        }
    }
}
