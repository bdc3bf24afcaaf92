import CDeviceIDPrimitives

/// Lowercase and uppercase hexadecimal text, and its strict parsing. Digits are written by
/// `dids_hex_encode`, which the C ABI's fast paths use too.
public enum Hex {
    public static func encode<C: Collection>(_ bytes: C, uppercase: Bool = false) -> String where C.Element == UInt8 {
        if let text = bytes.withContiguousStorageIfAvailable({ encode($0, uppercase) }) { return text }
        return Array(bytes).withUnsafeBufferPointer { encode($0, uppercase) }
    }

    private static func encode(_ input: UnsafeBufferPointer<UInt8>, _ uppercase: Bool) -> String {
        String(unsafeUninitializedCapacity: input.count * 2 + 1) { text in
            text.withMemoryRebound(to: CChar.self) { out in
                dids_hex_encode(input.baseAddress, input.count, uppercase ? 1 : 0, out.baseAddress!)
            }
            return input.count * 2
        }
    }

    /// 2 × size digits and a NUL into `out`, without allocating.
    static func write(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutablePointer<CChar>) {
        dids_hex_encode(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, 0, out)
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
