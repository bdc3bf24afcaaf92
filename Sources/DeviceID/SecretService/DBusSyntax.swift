/// The D-Bus specification's syntax for the names DeviceID sends, checked before any client
/// library sees them: libdbus aborts the process on an invalid object path or bus name
/// (`_dbus_check_is_valid_path`, measured), and GLib's constructors return NULL. Every path that
/// comes from the wire and every name from the environment passes through here first.
enum DBusSyntax {
    /// "/" or "/"-separated non-empty elements of [A-Za-z0-9_], without a trailing "/".
    static func isObjectPath(_ path: String) -> Bool {
        let bytes = Array(path.utf8)
        guard bytes.first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        guard bytes.last != UInt8(ascii: "/") else { return false }
        var previousWasSlash = false
        for byte in bytes {
            if byte == UInt8(ascii: "/") {
                if previousWasSlash { return false }
                previousWasSlash = true
            } else {
                guard isElementCharacter(byte, allowHyphen: false) else { return false }
                previousWasSlash = false
            }
        }
        return true
    }

    /// A well-known (`org.example.Name`) or unique (`:1.42`) bus name: at most 255 bytes, two or
    /// more "."-separated non-empty elements of [A-Za-z0-9_-], none starting with a digit unless
    /// the name is unique.
    static func isBusName(_ name: String) -> Bool {
        var bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= 255 else { return false }
        let unique = bytes[0] == UInt8(ascii: ":")
        if unique { bytes.removeFirst() }
        let elements = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard elements.count >= 2 else { return false }
        for element in elements {
            guard let first = element.first else { return false }
            if !unique && first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9") { return false }
            guard element.allSatisfy({ isElementCharacter($0, allowHyphen: true) }) else { return false }
        }
        return true
    }

    /// An interface name: two or more "."-separated elements of [A-Za-z0-9_], none starting with
    /// a digit, at most 255 bytes.
    static func isInterface(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= 255 else { return false }
        let elements = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        return elements.count >= 2 && elements.allSatisfy(isMemberBytes)
    }

    /// A member (method or signal) name: [A-Za-z_][A-Za-z0-9_]*, at most 255 bytes.
    static func isMember(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        return bytes.count <= 255 && isMemberBytes(bytes[...])
    }

    private static func isMemberBytes(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard let first = bytes.first, !(first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9")) else { return false }
        return bytes.allSatisfy { isElementCharacter($0, allowHyphen: false) }
    }

    /// Everything a method call names: its destination, object, interface and member.
    static func isValid(_ call: MethodCall) -> Bool {
        isBusName(call.destination) && isObjectPath(call.path) && isInterface(call.interface) && isMember(call.member)
    }

    private static func isElementCharacter(_ byte: UInt8, allowHyphen: Bool) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"):
            true
        case UInt8(ascii: "-"):
            allowHyphen
        default:
            false
        }
    }
}
