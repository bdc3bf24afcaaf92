/// Lowercase and uppercase hexadecimal text, and its strict parsing.
enum Hex {
    private static let lower = Array("0123456789abcdef".utf8)
    private static let upper = Array("0123456789ABCDEF".utf8)

    static func encode<C: Collection>(_ bytes: C, uppercase: Bool = false) -> String where C.Element == UInt8 {
        let digits = uppercase ? upper : lower
        return String(unsafeUninitializedCapacity: bytes.count * 2) { buffer in
            var i = 0
            for byte in bytes {
                buffer[i] = digits[Int(byte >> 4)]
                buffer[i + 1] = digits[Int(byte & 0x0F)]
                i += 2
            }
            return i
        }
    }

    /// The value of one ASCII hex digit, either case, or nil.
    @inline(__always)
    static func value(of digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit &- UInt8(ascii: "a") &+ 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit &- UInt8(ascii: "A") &+ 10
        default: nil
        }
    }

    /// Decodes an even number of hex digits; nil for anything else.
    static func decode<C: Collection>(_ text: C) -> [UInt8]? where C.Element == UInt8 {
        guard text.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(text.count / 2)
        var iterator = text.makeIterator()
        while let high = iterator.next(), let low = iterator.next() {
            guard let h = value(of: high), let l = value(of: low) else { return nil }
            out.append(h << 4 | l)
        }
        return out
    }
}
