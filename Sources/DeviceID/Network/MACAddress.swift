/// A hardware (EUI-48) address and where it came from.
public struct MACAddress: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]
    /// The interface it was read from.
    public let interface: String
    /// Read as the permanent (burned-in) address — ethtool's ETHTOOL_GPERMADDR, or an address
    /// the kernel reports as permanent — rather than a current one that may be randomised or set.
    public let isPermanent: Bool

    /// Locally administered (bit 0x02 of the first octet): chosen by software, as on most VMs and
    /// with randomised Wi-Fi addresses, and shared by many machines. A weak identifier.
    public var isLocallyAdministered: Bool { bytes[0] & 0x02 != 0 }
    public var isWeak: Bool { isLocallyAdministered }

    /// "AA:BB:CC:DD:EE:FF".
    public var description: String { text(compact: false) }

    /// "AA:BB:CC:DD:EE:FF", or with `compact` the 12 uppercase digits "AABBCCDDEEFF" that iOS's MD5(MAC) technique hashed.
    public func text(compact: Bool) -> String {
        let hex = Array(Hex.encode(bytes, uppercase: true).utf8)
        guard !compact else { return String(decoding: hex, as: UTF8.self) }
        var out = [UInt8]()
        for (i, digit) in hex.enumerated() {
            if i > 0 && i % 2 == 0 { out.append(UInt8(ascii: ":")) }
            out.append(digit)
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Addresses that identify nothing: all zeros, broadcast, multicast, and iOS 7's constant
    /// 02:00:00:00:00:00.
    static func isUsable(_ bytes: [UInt8]) -> Bool {
        bytes.count == 6 && bytes != [0, 0, 0, 0, 0, 0] && bytes != [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
            && bytes[0] & 0x01 == 0 && bytes != [0x02, 0, 0, 0, 0, 0]
    }

    /// Parses "aa:bb:cc:dd:ee:ff" (either case) or 12 hex digits.
    public init?(parsing text: String, interface: String = "", isPermanent: Bool = false) {
        let utf8 = Array(text.utf8)
        var digits = [UInt8]()
        switch utf8.count {
        case 12:
            digits = utf8
        case 17:
            for (i, c) in utf8.enumerated() {
                if i % 3 == 2 {
                    guard c == UInt8(ascii: ":") || c == UInt8(ascii: "-") else { return nil }
                } else {
                    digits.append(c)
                }
            }
        default:
            return nil
        }
        guard let raw = Hex.decode(digits) else { return nil }
        self.init(bytes: raw, interface: interface, isPermanent: isPermanent)
    }

    init(bytes: [UInt8], interface: String, isPermanent: Bool) {
        self.bytes = bytes
        self.interface = interface
        self.isPermanent = isPermanent
    }
}
