/// The CBOR (RFC 8949) of WebAuthn's structures, in CTAP2's canonical form: shortest heads,
/// definite lengths, and map keys in length-first order (RFC 8949 §4.2.3, RFC 7049 §3.9), the
/// order WebAuthn's COSE keys and attestation objects are written in. Encoding only: DeviceID
/// writes these structures and never reads one.
enum CBOR: Equatable {
    case unsigned(UInt64)
    /// A negative integer, given as itself (-1, -7, …; made by `int`).
    case negative(Int64)
    case bytes([UInt8])
    case text(String)
    case array([CBOR])
    case map([Entry])

    struct Entry: Equatable {
        let key: CBOR
        let value: CBOR
    }

    static func int(_ value: Int64) -> CBOR { value < 0 ? .negative(value) : .unsigned(UInt64(value)) }

    var encoded: [UInt8] {
        var out = [UInt8]()
        append(to: &out)
        return out
    }

    private static func head(_ major: UInt8, _ value: UInt64, _ out: inout [UInt8]) {
        let m = major << 5
        let width: Int
        switch value {
        case 0..<24:
            out.append(m | UInt8(value))
            return
        case 24...0xff: (width, out) = (1, out + [m | 24])
        case 0x100...0xffff: (width, out) = (2, out + [m | 25])
        case 0x1_0000...0xffff_ffff: (width, out) = (4, out + [m | 26])
        default: (width, out) = (8, out + [m | 27])
        }
        for k in stride(from: width - 1, through: 0, by: -1) { out.append(UInt8(value >> UInt64(8 * k) & 0xff)) }
    }

    private func append(to out: inout [UInt8]) {
        switch self {
        case .unsigned(let v): Self.head(0, v, &out)
        case .negative(let v): Self.head(1, UInt64(bitPattern: ~v), &out)  // -1 - v
        case .bytes(let b):
            Self.head(2, UInt64(b.count), &out)
            out += b
        case .text(let t):
            let utf8 = Array(t.utf8)
            Self.head(3, UInt64(utf8.count), &out)
            out += utf8
        case .array(let items):
            Self.head(4, UInt64(items.count), &out)
            for item in items { item.append(to: &out) }
        case .map(let entries):
            let pairs = entries.map { ($0.key.encoded, $0.value.encoded) }.ordered { a, b in
                a.0.count != b.0.count ? a.0.count < b.0.count : a.0.lexicographicallyPrecedes(b.0)
            }
            Self.head(5, UInt64(pairs.count), &out)
            for (key, value) in pairs { out += key + value }
        }
    }
}
