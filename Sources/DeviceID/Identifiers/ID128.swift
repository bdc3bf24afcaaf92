import CDeviceIDAPI
import CDeviceIDPrimitives
import CDeviceIDLibc

/// A 128-bit identifier, written as an RFC 9562 UUID.
///
/// Named after systemd's `sd_id128_t` to avoid clashing with Foundation's `UUID`.
public struct ID128: Hashable, Sendable, CustomStringConvertible {
    /// The 16 bytes, most significant first.
    public let bytes: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                       UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8)

    /// The length of the canonical text form, without a terminator (the header's
    /// `DEVICEID_UUID_STRING_MAX` less its NUL).
    public static let stringLength = Int(DEVICEID_UUID_STRING_MAX) - 1
    /// The number of bytes.
    public static let byteCount = 16
    /// 00000000-0000-0000-0000-000000000000: what an opted-out identifier reads as.
    public static let null = ID128(bytes: [UInt8](repeating: 0, count: byteCount))!

    /// An identifier from exactly 16 bytes.
    public init?(bytes array: [UInt8]) {
        guard array.count == Self.byteCount else { return nil }
        bytes = (array[0], array[1], array[2], array[3], array[4], array[5], array[6], array[7],
                 array[8], array[9], array[10], array[11], array[12], array[13], array[14], array[15])
    }

    /// A random version-4 UUID from the kernel's CSPRNG, through the same per-thread pool as the
    /// C ABI's `deviceid_uuid_generate` (one `getrandom` per 16 UUIDs; never shared with a fork).
    public static func random() throws(DeviceIDError) -> ID128 {
        var raw = [UInt8](repeating: 0, count: Self.byteCount)
        let status = raw.withUnsafeMutableBufferPointer { dids_uuid4_bytes($0.baseAddress!) }
        guard status == 0 else {
            throw DeviceIDError(.io, "getrandom failed: \(String(cString: strerror(-status)))")
        }
        return ID128(bytes: raw)!
    }

    /// The same bytes with the version nibble set to 4 and the RFC 9562 variant bits set,
    /// as systemd's `sd_id128_make_v4_uuid` does.
    public func asVersion4() -> ID128 {
        var b = array
        b.withUnsafeMutableBufferPointer { dids_make_v4($0.baseAddress!) }
        return ID128(bytes: b)!
    }

    public var array: [UInt8] {
        withUnsafeBytes(of: bytes) { Array($0) }
    }

    public var isNull: Bool { self == .null }

    /// Canonical lowercase text: 8-4-4-4-12 hex digits.
    public var uuidString: String { format(uppercase: false, dashes: true) }

    public var description: String { uuidString }

    /// The text form; uppercase is the form iOS prints, without dashes is systemd's form.
    public func format(uppercase: Bool = false, dashes: Bool = true) -> String {
        withUnsafeBytes(of: bytes) { raw in
            String(unsafeUninitializedCapacity: 37) { text in
                text.withMemoryRebound(to: CChar.self) { out in
                    dids_uuid_format(raw.baseAddress!.assumingMemoryBound(to: UInt8.self), uppercase ? 1 : 0,
                                     dashes ? 0 : 1, out.baseAddress!)
                }
                return dashes ? 36 : 32
            }
        }
    }

    /// Parses 36-character dashed text (8-4-4-4-12) or 32 plain hex digits, either case.
    /// Anything else — braces, URNs, whitespace, misplaced dashes — is refused.
    public init?(parsing text: String) {
        self.init(parsingUTF8: Array(text.utf8))
    }

    init?(parsingUTF8 utf8: [UInt8]) {
        var digits = [UInt8]()
        digits.reserveCapacity(32)
        switch utf8.count {
        case 32:
            digits = utf8
        case 36:
            for (i, c) in utf8.enumerated() {
                if i == 8 || i == 13 || i == 18 || i == 23 {
                    guard c == UInt8(ascii: "-") else { return nil }
                } else {
                    digits.append(c)
                }
            }
        default:
            return nil
        }
        guard let raw = Hex.decode(digits) else { return nil }
        self.init(bytes: raw)
    }

    /// The RFC 9562 version nibble.
    public var version: Int { Int(bytes.6 >> 4) }

    /// True for the RFC 9562 (10xx) variant.
    public var isRFC9562Variant: Bool { bytes.8 & 0xC0 == 0x80 }

    public static func == (a: ID128, b: ID128) -> Bool { a.array == b.array }
    public func hash(into hasher: inout Hasher) { hasher.combine(array) }
}
