/// A string as JSON text (RFC 8259 §7), the one escaper of the library and the command: `"` and
/// `\` escaped, the two-character escapes for newline, carriage return and tab, `\u00XX` for every
/// other control character (backspace and form feed included), and everything else, UTF-8
/// included, as it is. (The device's attestation messages carry base64 and names, which have
/// none of these.)
package enum JSONString {
    package static func quoted(_ text: String) -> String {
        var out = [UInt8(ascii: "\"")]
        let digits = Array("0123456789abcdef".utf8)
        for c in text.utf8 {
            switch c {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), c]
            case 0x0a: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0d: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20: out += Array("\\u00".utf8) + [digits[Int(c >> 4)], digits[Int(c & 15)]]
            default: out.append(c)
            }
        }
        out.append(UInt8(ascii: "\""))
        return String(decoding: out, as: UTF8.self)
    }
}
