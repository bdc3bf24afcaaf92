import CDeviceIDAPI

/// The on-disk form of one file-store item: binary-safe, self-describing and checksummed.
///
///     offset  size  field
///     0       8     magic "DEVICEID"
///     8       1     format version (1)
///     9       1     kind (StoreKey.Kind)
///     10      2     reserved, zero
///     12      4     key length K, little endian
///     16      4     value length V, little endian
///     20      K     key (service, NUL, account)
///     20+K    V     value
///     20+K+V  32    SHA-256 of every byte before it
///
/// A file that fails any check — size, magic, lengths, checksum, or a key other than the one asked
/// for — is corrupt. It is reported, never repaired by guessing and never silently replaced.
package enum FileEnvelope {
    static let magic = Array("DEVICEID".utf8)
    static let version: UInt8 = 1
    static let headerSize = 20
    static let checksumSize = 32
    /// The largest secret DeviceID accepts, in any store: the header's `DEVICEID_SECRET_MAX`.
    static let maximumSecretSize = Int(DEVICEID_SECRET_MAX)
    /// The largest value the file store keeps: a secret, sealed (`Sealing.overhead`) in a sandbox.
    static let maximumValueSize = maximumSecretSize + 64
    static let maximumKeySize = 2 * 4096 + 1
    static let maximumFileSize = headerSize + maximumKeySize + maximumValueSize + checksumSize

    package static func encode(key: StoreKey, value: [UInt8]) throws(DeviceIDError) -> [UInt8] {
        let k = key.encoded
        var out = magic
        out.reserveCapacity(headerSize + k.count + value.count + checksumSize)
        out += [version, key.kind.rawValue, 0, 0]
        out += littleEndian(UInt32(k.count)) + littleEndian(UInt32(value.count))
        out += k
        out += value
        out += SHA256.hash(out)
        return out
    }

    package static func decode(_ bytes: [UInt8], expecting key: StoreKey) throws(DeviceIDError) -> [UInt8] {
        let (kind, keyBytes, value) = try split(bytes)
        guard kind == key.kind.rawValue, keyBytes.elementsEqual(key.encoded) else {
            throw DeviceIDError(.corrupt, "file holds a different item than its name says")
        }
        return value
    }

    /// The value of a valid file, whichever item it holds.
    static func decodeValue(_ bytes: [UInt8]) throws(DeviceIDError) -> [UInt8] {
        try split(bytes).value
    }

    private static func split(_ bytes: [UInt8]) throws(DeviceIDError)
        -> (kind: UInt8, key: ArraySlice<UInt8>, value: [UInt8]) {
        guard bytes.count >= headerSize + checksumSize else {
            throw DeviceIDError(.corrupt, "file is truncated (\(bytes.count) bytes)")
        }
        guard bytes[0..<8].elementsEqual(magic) else { throw DeviceIDError(.corrupt, "file has no DeviceID header") }
        guard bytes[8] == version else { throw DeviceIDError(.corrupt, "file has unknown format version \(bytes[8])") }
        let keyLength = Int(readLittleEndian(bytes, at: 12))
        let valueLength = Int(readLittleEndian(bytes, at: 16))
        guard keyLength <= maximumKeySize, valueLength <= maximumValueSize,
              bytes.count == headerSize + keyLength + valueLength + checksumSize
        else {
            throw DeviceIDError(.corrupt, "file length does not match its header")
        }
        let bodyEnd = headerSize + keyLength + valueLength
        let checksum = SHA256.hash(bytes[0..<bodyEnd])
        guard checksum.elementsEqual(bytes[bodyEnd...]) else {
            throw DeviceIDError(.corrupt, "file checksum does not match")
        }
        return (bytes[9], bytes[headerSize..<(headerSize + keyLength)], Array(bytes[(headerSize + keyLength)..<bodyEnd]))
    }

    private static func littleEndian(_ n: UInt32) -> [UInt8] {
        [UInt8(n & 0xFF), UInt8((n >> 8) & 0xFF), UInt8((n >> 16) & 0xFF), UInt8(n >> 24)]
    }

    private static func readLittleEndian(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
            | UInt32(bytes[offset + 3]) << 24
    }
}
