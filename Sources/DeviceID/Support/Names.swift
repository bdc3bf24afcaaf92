import CDeviceIDAPI

/// Validation of the names callers pass: app ids, vendor ids, secret services and accounts.
public enum Names {
    /// The longest name accepted, in UTF-8 bytes: the header's `DEVICEID_NAME_MAX` less its NUL.
    public static let maximumLength = Int(DEVICEID_NAME_MAX) - 1

    /// Valid UTF-8 (guaranteed by `String`), 1 to 255 bytes, no control characters: neither C0
    /// (U+0000–U+001F), DEL (U+007F) nor C1 (U+0080–U+009F, the bytes C2 80–C2 9F in UTF-8).
    package static func validate(_ name: String, _ what: String) throws(DeviceIDError) {
        let utf8 = name.utf8
        guard !utf8.isEmpty else { throw DeviceIDError(.invalidArgument, "\(what) is empty") }
        guard utf8.count <= maximumLength else {
            throw DeviceIDError(.invalidArgument, "\(what) is longer than \(maximumLength) bytes")
        }
        guard !name.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else {
            throw DeviceIDError(.invalidArgument, "\(what) contains a control character")
        }
    }

    /// Services under this prefix belong to DeviceID's own identifiers and settings.
    static let reservedServicePrefix = "deviceid."

    /// A secret's service must not be one of DeviceID's own.
    static func validateSecret(service: String, account: String) throws(DeviceIDError) {
        try validate(service, "service")
        try validate(account, "account")
        guard !service.hasPrefix(reservedServicePrefix) else {
            throw DeviceIDError(.invalidArgument, "services starting with \"\(reservedServicePrefix)\" are reserved for DeviceID")
        }
    }
}
