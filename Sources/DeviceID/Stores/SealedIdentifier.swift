/// A this-device-only identifier record as a store keeps it (docs/STATE.md, "Protection
/// classes"): the plain record's text (`IdentifierRecord.serialized`, without `confirmed`) in a
/// `ThisDeviceSeal` envelope, with its generation in the clear so that resets and tombstones
/// work on records nobody here can open. In the file store it is text:
///
///     this-device-only
///     generation=2
///     sealed=RElEVERPMQ…(base64 of the envelope)
///     confirmed=1764512000
///
/// (`generation` absent: 0; `confirmed`, the mirror's, as for a plain record.) In the keyring the
/// item's secret is the envelope itself, its attributes `deviceid-protection=this-device-only` and
/// `deviceid-generation`.
struct SealedIdentifier: Equatable {
    var generation: UInt64
    var envelope: [UInt8]
    var confirmed: UInt64?

    static let firstLine = "this-device-only"
    static let protectionAttribute = IdentifierRecord.attributePrefix + "protection"
    private static let generationAttribute = IdentifierRecord.attributePrefix + "generation"

    /// Seals `record` for `key` with `binding` (one TPM conversation).
    init(sealing record: IdentifierRecord, for key: StoreKey, binding: MachineBinding) throws(DeviceIDError) {
        var plain = record
        plain.confirmed = nil
        generation = record.generation
        envelope = try ThisDeviceSeal.seal(plain.serialized(), context: key.encoded, binding: binding)
    }

    /// The record inside (one TPM conversation): `.copied` when another TPM sealed it.
    func open(for key: StoreKey, binding: MachineBinding) throws(DeviceIDError) -> IdentifierRecord {
        var record = try IdentifierRecord(parsing: try ThisDeviceSeal.open(envelope, context: key.encoded, binding: binding))
        guard record.generation == generation, record.confirmed == nil else {
            throw DeviceIDError(.corrupt, "a this-device-only record's generation differs from what it seals")
        }
        record.confirmed = confirmed
        record.sealed = true
        return record
    }

    /// The file store's text, with the mirror's confirmation when given.
    func serialized(confirmed: UInt64?) -> [UInt8] {
        var text = Self.firstLine + "\n"
        if generation > 0 { text += "generation=\(generation)\n" }
        text += "sealed=\(Base64.encode(envelope))\n"
        if let confirmed { text += "confirmed=\(confirmed)\n" }
        return Array(text.utf8)
    }

    init(parsing bytes: [UInt8]) throws(DeviceIDError) {
        let corrupt = DeviceIDError(.corrupt, "stored this-device-only record is malformed")
        guard bytes.count <= IdentifierRecord.maximumSize else { throw corrupt }
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        if lines.last?.isEmpty == true { lines.removeLast() }
        var generation: UInt64 = 0, envelope: [UInt8]?, confirmed: UInt64?
        var seen = Set<String>()
        for line in lines.dropFirst() {
            guard let eq = line.firstIndex(of: UInt8(ascii: "=")) else { throw corrupt }
            let name = String(decoding: line[line.startIndex..<eq], as: UTF8.self)
            let value = String(decoding: line[line.index(after: eq)...], as: UTF8.self)
            guard seen.insert(name).inserted else { throw corrupt }
            switch name {
            case "generation", "confirmed":
                guard !value.isEmpty, value.utf8.count <= 20, let n = UInt64(value),
                      name == "confirmed" || n < IdentifierRecord.generationLimit else { throw corrupt }
                if name == "generation" { generation = n } else { confirmed = n }
            case "sealed":
                guard let raw = Base64.decode(value), ThisDeviceSeal.isSealed(raw) else { throw corrupt }
                envelope = raw
            default:
                throw corrupt
            }
        }
        guard let envelope else { throw corrupt }
        self.generation = generation
        self.envelope = envelope
        self.confirmed = confirmed
    }

    // MARK: The keyring form

    var keyringAttributes: [(String, String)] {
        [(Self.protectionAttribute, "this-device-only")] + (generation > 0 ? [(Self.generationAttribute, String(generation))] : [])
    }

    static func fromKeyring(secret: [UInt8], attributes: [String: String]) throws(DeviceIDError) -> SealedIdentifier {
        var generation: UInt64 = 0
        if let text = attributes[generationAttribute] {
            guard !text.isEmpty, text.utf8.count <= 20, let n = UInt64(text), n < IdentifierRecord.generationLimit else {
                throw DeviceIDError(.corrupt, "keyring this-device-only item has a malformed generation")
            }
            generation = n
        }
        guard attributes[protectionAttribute] == "this-device-only", ThisDeviceSeal.isSealed(secret) else {
            throw DeviceIDError(.corrupt, "keyring this-device-only item is malformed")
        }
        return SealedIdentifier(generation: generation, envelope: secret, confirmed: nil)
    }

    private init(generation: UInt64, envelope: [UInt8], confirmed: UInt64?) {
        self.generation = generation
        self.envelope = envelope
        self.confirmed = confirmed
    }
}
