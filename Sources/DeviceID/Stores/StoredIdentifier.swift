/// What one store holds for one identifier key: an ID record, or the tombstone a reset left
/// (docs/STATE.md, "Records").
enum StoredIdentifier: Equatable {
    case record(IdentifierRecord)
    /// IDs of generations below this one were reset.
    case tombstone(generation: UInt64)
    /// A this-device-only record, which only this machine's TPM opens (`IdentifierKeeper` does).
    case sealed(SealedIdentifier)

    var record: IdentifierRecord? {
        if case .record(let r) = self { return r }
        return nil
    }

    // MARK: The file form

    private static let tombstoneLine = "reset"

    /// A tombstone in the file store: `reset`, then `generation=N`.
    static func tombstoneText(_ generation: UInt64) -> [UInt8] {
        Array("\(tombstoneLine)\ngeneration=\(generation)\n".utf8)
    }

    /// Parses a file-store value: a tombstone, or an ID record (`IdentifierRecord(parsing:)`).
    init(parsing bytes: [UInt8]) throws(DeviceIDError) {
        let prefix = Array((Self.tombstoneLine + "\ngeneration=").utf8)
        if bytes.starts(with: prefix) {
            var digits = bytes.dropFirst(prefix.count)
            if digits.last == UInt8(ascii: "\n") { digits = digits.dropLast() }
            guard !digits.isEmpty, digits.count <= 20, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let n = UInt64(String(decoding: digits, as: UTF8.self)), n > 0, n < IdentifierRecord.generationLimit
            else { throw DeviceIDError(.corrupt, "stored reset record is malformed") }
            self = .tombstone(generation: n)
            return
        }
        if bytes.starts(with: Array((SealedIdentifier.firstLine + "\n").utf8)) {
            self = .sealed(try SealedIdentifier(parsing: bytes))
            return
        }
        self = .record(try IdentifierRecord(parsing: bytes))
    }

    // MARK: The keyring form

    /// The attribute that makes a keyring item a tombstone; its secret is empty.
    static let tombstoneAttribute = IdentifierRecord.attributePrefix + "reset"

    static func tombstoneAttributes(_ generation: UInt64) -> [(String, String)] {
        [(tombstoneAttribute, String(generation))]
    }

    /// Reads a keyring item; `isLegacy` as `IdentifierRecord.fromKeyring`.
    static func fromKeyring(secret: [UInt8], attributes: [String: String]) throws(DeviceIDError)
        -> (stored: StoredIdentifier, isLegacy: Bool) {
        if let text = attributes[tombstoneAttribute] {
            guard secret.isEmpty, !text.isEmpty, text.utf8.count <= 20, let n = UInt64(text), n > 0,
                  n < IdentifierRecord.generationLimit else {
                throw DeviceIDError(.corrupt, "keyring reset item is malformed")
            }
            return (.tombstone(generation: n), false)
        }
        if attributes[SealedIdentifier.protectionAttribute] != nil {
            return (.sealed(try SealedIdentifier.fromKeyring(secret: secret, attributes: attributes)), false)
        }
        let (record, legacy) = try IdentifierRecord.fromKeyring(secret: secret, attributes: attributes)
        return (.record(record), legacy)
    }
}
