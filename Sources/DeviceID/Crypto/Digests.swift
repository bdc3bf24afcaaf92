/// Hex digests for callers, and the MAC-based identifiers of the iOS playbook (README, "Every
/// technique of the iOS playbook").
public enum Digests {
    public enum Algorithm: Int32, Sendable, CaseIterable {
        case md5 = 1
        case sha256 = 2

        var backend: LibCrypto.Algorithm { self == .md5 ? .md5 : .sha256 }
        public var hexLength: Int { self == .md5 ? 32 : 64 }
    }

    /// Lowercase hex of the digest of `bytes`. MD5 refused by OpenSSL (FIPS) is `.unsupported`.
    public static func hex(_ algorithm: Algorithm, _ bytes: [UInt8]) throws(DeviceIDError) -> String {
        Hex.encode(try LibCrypto.hash(algorithm.backend, bytes))
    }

    /// As `hex`, into a caller buffer of at least `hexLength + 1` bytes, without allocating.
    package static func hex(_ algorithm: Algorithm, _ bytes: UnsafeRawBufferPointer,
                            into out: UnsafeMutablePointer<CChar>) throws(DeviceIDError) {
        try LibCrypto.hexDigest(algorithm.backend, bytes, into: out)
    }

    /// Hashing a push token (or any token) with a bundle id, as iOS apps did with theirs:
    /// hex(H(token bytes ‖ UTF-8 bundle id)).
    public static func tokenHash(_ token: [UInt8], bundleID: String, _ algorithm: Algorithm) throws(DeviceIDError) -> String {
        try Names.validate(bundleID, "bundle id")
        return try hex(algorithm, token + Array(bundleID.utf8))
    }

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
