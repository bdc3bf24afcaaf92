/// Whether bytes are well-formed UTF-8, decided without building a String: for secrets, of which
/// a String would be one more copy left in freed memory.
package enum UTF8Validation {
    package static func isValid(_ bytes: [UInt8]) -> Bool {
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }
}
