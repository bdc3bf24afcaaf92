extension Digests {
    /// iOS's MD5(MAC) and MD5(MAC + bundle id): MD5 of the 12 uppercase hex digits of the
    /// address ("AABBCCDDEEFF"), followed by the bundle id's UTF-8 bytes when one is given.
    public static func macMD5(_ address: MACAddress, bundleID: String? = nil) throws(DeviceIDError) -> String {
        var input = Array(address.text(compact: true).utf8)
        if let bundleID {
            try Names.validate(bundleID, "bundle id")
            input += Array(bundleID.utf8)
        }
        return try hex(.md5, input)
    }
}
