/// Words for people — an error's detail, a diagnosis, the command's messages — built one way:
/// static parts and values joined by the few small functions below, each compiled once.
///
/// Why not `String`'s own interpolation: in the Embedded build (-Osize) `DefaultStringInterpolation`
/// is inlined at every site, literal by literal and value by value. Measured on one message of two
/// values and three literals: 1,310 bytes of code as a `String`, 151 as `Words`; the library has
/// some 300 such messages. So a message is written as it reads — `DeviceIDError(.io, "cannot read
/// \(path): \(reason)")` — and its type, `Words`, chooses these functions instead.
///
/// The values a message takes: text, integers (in decimal; hex is `Hex`'s), and anything
/// `CustomStringConvertible` (a status's `Code`, a `DeviceIDError`).
package struct Words: ExpressibleByStringInterpolation, CustomStringConvertible, Sendable {
    package let text: String

    package init(_ text: String) { self.text = text }
    package init(stringLiteral literal: StaticString) { text = Words.text(of: literal) }
    package init(stringInterpolation: StringInterpolation) { text = stringInterpolation.text }

    package var description: String { text }

    /// A long message written over several lines: `"… \(a) …" + "… \(b)"`.
    @inline(never)
    package static func + (lhs: Words, rhs: Words) -> Words { Words(lhs.text + rhs.text) }
    package static func + (lhs: Words, rhs: String) -> Words { lhs + Words(rhs) }
    package static func + (lhs: String, rhs: Words) -> Words { Words(lhs) + rhs }
    package static func += (lhs: inout Words, rhs: Words) { lhs = lhs + rhs }

    @inline(never)
    static func text(of literal: StaticString) -> String {
        String(decoding: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount), as: UTF8.self)
    }

    package struct StringInterpolation: StringInterpolationProtocol {
        var text = ""

        package init(literalCapacity: Int, interpolationCount: Int) {}

        @inline(never)
        package mutating func appendLiteral(_ literal: StaticString) { text += Words.text(of: literal) }

        @inline(never)
        package mutating func appendInterpolation(_ value: String) { text += value }

        @inline(never)
        package mutating func appendInterpolation(_ value: Substring) { text += value }

        package mutating func appendInterpolation(_ value: Words) { appendInterpolation(value.text) }

        package mutating func appendInterpolation<T: BinaryInteger>(_ value: T) {
            if T.isSigned { appendSigned(Int64(truncatingIfNeeded: value)) } else { appendUnsigned(UInt64(truncatingIfNeeded: value)) }
        }

        @inline(never)
        mutating func appendSigned(_ value: Int64) { text += String(value) }

        @inline(never)
        mutating func appendUnsigned(_ value: UInt64) { text += String(value) }

        @inline(never)
        package mutating func appendInterpolation<T: CustomStringConvertible>(_ value: T) { text += value.description }
    }
}
