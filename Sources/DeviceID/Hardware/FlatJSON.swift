/// The one JSON shape the attestation wire format uses: a single object whose values are strings
/// or integers (docs/HARDWARE-ID.md). Written with every string escaped; read strictly, so that
/// anything else is an invalid argument rather than a guess.
struct FlatJSON {
    enum Value: Equatable {
        case string(String)
        case integer(Int)
    }

    private(set) var fields: [(String, Value)] = []

    init() {}

    mutating func set(_ key: String, _ value: String) { fields.append((key, .string(value))) }
    mutating func set(_ key: String, _ value: Int) { fields.append((key, .integer(value))) }

    subscript(key: String) -> Value? {
        for (k, v) in fields where k == key { return v }
        return nil
    }

    func string(_ key: String) -> String? {
        if case .string(let s)? = self[key] { return s }
        return nil
    }

    func integer(_ key: String) -> Int? {
        if case .integer(let n)? = self[key] { return n }
        return nil
    }

    var text: String {
        var out = "{"
        for (i, (key, value)) in fields.enumerated() {
            if i > 0 { out += "," }
            out += JSONString.quoted(key) + ":"
            switch value {
            case .string(let s): out += JSONString.quoted(s)
            case .integer(let n): out += String(n)
            }
        }
        return out + "}"
    }

    /// Parses one object of string and integer values (whitespace allowed between tokens); nil
    /// for anything else, including a duplicate key.
    init?(parsing text: String) {
        let b = Array(text.utf8)
        var i = 0
        func skip() { while i < b.count, b[i] == 0x20 || b[i] == 0x0a || b[i] == 0x0d || b[i] == 0x09 { i += 1 } }
        func string() -> String? {
            guard i < b.count, b[i] == UInt8(ascii: "\"") else { return nil }
            i += 1
            var out = [UInt8]()
            while i < b.count {
                let c = b[i]
                i += 1
                switch c {
                case UInt8(ascii: "\""): return String(validating: out, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard i < b.count else { return nil }
                    let e = b[i]
                    i += 1
                    switch e {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                    case UInt8(ascii: "n"): out.append(0x0a)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "r"): out.append(0x0d)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0c)
                    case UInt8(ascii: "u"):
                        // Only the BMP below the surrogates, which is all this format writes.
                        guard i + 4 <= b.count else { return nil }
                        var v: UInt32 = 0
                        for k in 0..<4 {
                            guard let d = Hex.value(of: b[i + k]) else { return nil }
                            v = v << 4 | UInt32(d)
                        }
                        i += 4
                        guard let scalar = Unicode.Scalar(v) else { return nil }
                        out += Array(String(Character(scalar)).utf8)
                    default: return nil
                    }
                case 0..<0x20: return nil
                default: out.append(c)
                }
            }
            return nil
        }
        skip()
        guard i < b.count, b[i] == UInt8(ascii: "{") else { return nil }
        i += 1
        skip()
        var fields: [(String, Value)] = []
        if i < b.count, b[i] == UInt8(ascii: "}") {
            i += 1
        } else {
            while true {
                skip()
                guard let key = string() else { return nil }
                guard !fields.contains(where: { $0.0 == key }) else { return nil }
                skip()
                guard i < b.count, b[i] == UInt8(ascii: ":") else { return nil }
                i += 1
                skip()
                if i < b.count, b[i] == UInt8(ascii: "\"") {
                    guard let s = string() else { return nil }
                    fields.append((key, .string(s)))
                } else {
                    var digits = [UInt8]()
                    if i < b.count, b[i] == UInt8(ascii: "-") { digits.append(b[i]); i += 1 }
                    while i < b.count, b[i] >= UInt8(ascii: "0"), b[i] <= UInt8(ascii: "9"), digits.count < 19 {
                        digits.append(b[i])
                        i += 1
                    }
                    guard let n = Int(String(decoding: digits, as: UTF8.self)) else { return nil }
                    fields.append((key, .integer(n)))
                }
                skip()
                guard i < b.count else { return nil }
                if b[i] == UInt8(ascii: ",") { i += 1; continue }
                guard b[i] == UInt8(ascii: "}") else { return nil }
                i += 1
                break
            }
        }
        skip()
        guard i == b.count else { return nil }
        self.fields = fields
    }
}
