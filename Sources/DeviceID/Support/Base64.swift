/// Standard base64 with padding (RFC 4648 §4): the binary fields of the attestation wire format;
/// and base64url without padding (§5), as WebAuthn writes its binary fields.
package enum Base64 {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    package static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let n = min(3, bytes.count - i)
            let b0 = UInt32(bytes[i]), b1 = n > 1 ? UInt32(bytes[i + 1]) : 0, b2 = n > 2 ? UInt32(bytes[i + 2]) : 0
            let v = b0 << 16 | b1 << 8 | b2
            out.append(alphabet[Int(v >> 18 & 63)])
            out.append(alphabet[Int(v >> 12 & 63)])
            out.append(n > 1 ? alphabet[Int(v >> 6 & 63)] : UInt8(ascii: "="))
            out.append(n > 2 ? alphabet[Int(v & 63)] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func value(_ c: UInt8) -> UInt32? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): UInt32(c - UInt8(ascii: "A"))
        case UInt8(ascii: "a")...UInt8(ascii: "z"): UInt32(c - UInt8(ascii: "a")) + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(c - UInt8(ascii: "0")) + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }

    /// The bytes of canonical padded base64; nil for anything else (no whitespace, no URL alphabet).
    package static func decode(_ text: String) -> [UInt8]? {
        let input = Array(text.utf8)
        guard input.count % 4 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(input.count / 4 * 3)
        var i = 0
        while i < input.count {
            let last = i + 4 == input.count
            let pad = last ? (input[i + 3] == UInt8(ascii: "=") ? (input[i + 2] == UInt8(ascii: "=") ? 2 : 1) : 0) : 0
            var v: UInt32 = 0
            for k in 0..<4 {
                if k >= 4 - pad { v <<= 6; continue }
                guard let d = value(input[i + k]) else { return nil }
                v = v << 6 | d
            }
            out.append(UInt8(v >> 16 & 0xff))
            if pad < 2 { out.append(UInt8(v >> 8 & 0xff)) }
            if pad < 1 { out.append(UInt8(v & 0xff)) }
            // Canonical: the bits the padding drops are zero.
            if pad == 2 && v & 0xffff != 0 || pad == 1 && v & 0xff != 0 { return nil }
            i += 4
        }
        return out
    }

    /// base64url without padding (RFC 4648 §5, as WebAuthn and JOSE write it).
    package static func encodeURL(_ bytes: [UInt8]) -> String {
        var text = Array(encode(bytes).utf8)
        while text.last == UInt8(ascii: "=") { text.removeLast() }
        return String(decoding: text.map { $0 == UInt8(ascii: "+") ? UInt8(ascii: "-") : $0 == UInt8(ascii: "/") ? UInt8(ascii: "_") : $0 },
                      as: UTF8.self)
    }

    /// The bytes of canonical unpadded base64url; nil for anything else (padding, the standard
    /// alphabet, whitespace, a length that leaves 6 bits over).
    package static func decodeURL(_ text: String) -> [UInt8]? {
        var input = [UInt8]()
        for c in text.utf8 {
            switch c {
            case UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="): return nil
            case UInt8(ascii: "-"): input.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): input.append(UInt8(ascii: "/"))
            default: input.append(c)
            }
        }
        guard input.count % 4 != 1 else { return nil }
        while input.count % 4 != 0 { input.append(UInt8(ascii: "=")) }
        return decode(String(decoding: input, as: UTF8.self))
    }
}
