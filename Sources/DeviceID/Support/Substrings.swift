/// Substring search and replacement on UTF-8 bytes. `String.contains(_: String)` and
/// `replacing(_:with:)` come from _StringProcessing, which Embedded Swift does not have; and byte
/// comparison is what these callers mean (error texts, machine IDs), not Unicode equivalence.
extension String {
    /// Whether `needle` occurs in this string.
    func includes(_ needle: String) -> Bool { firstOffset(of: needle, from: 0) != nil }

    /// This string with every occurrence of `needle` replaced by `replacement`.
    func replacingAll(_ needle: String, with replacement: String) -> String {
        guard !needle.isEmpty, firstOffset(of: needle, from: 0) != nil else { return self }
        let bytes = Array(utf8), pattern = Array(needle.utf8)
        var out: [UInt8] = [], i = 0
        while let hit = firstOffset(of: pattern, in: bytes, from: i) {
            out += bytes[i..<hit]
            out += replacement.utf8
            i = hit + pattern.count
        }
        out += bytes[i...]
        return String(decoding: out, as: UTF8.self)
    }

    /// This string without leading and trailing spaces, tabs and carriage returns.
    func trimmingSpaces() -> String {
        let blank: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }
        let bytes = Array(utf8)
        guard let first = bytes.firstIndex(where: { !blank($0) }), let last = bytes.lastIndex(where: { !blank($0) })
        else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }

    private func firstOffset(of needle: String, from start: Int) -> Int? {
        firstOffset(of: Array(needle.utf8), in: Array(utf8), from: start)
    }

    private func firstOffset(of pattern: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard !pattern.isEmpty else { return start }
        guard bytes.count >= pattern.count else { return nil }
        var i = start
        while i <= bytes.count - pattern.count {
            if bytes[i] == pattern[0] && bytes[i..<(i + pattern.count)].elementsEqual(pattern) { return i }
            i += 1
        }
        return nil
    }
}
