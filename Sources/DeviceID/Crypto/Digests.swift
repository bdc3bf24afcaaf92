/// Hex digests for callers, and hashing a token with a bundle id (docs/TECHNIQUES.md, "Every
/// technique of the iOS playbook"); MD5 of a MAC address is in API/Digests+MAC.swift, above the
/// network layer.
public enum Digests {
    /// A digest algorithm. The raw values are the C ABI's `DEVICEID_HASH_*`.
    public enum Algorithm: Int32, Sendable, CaseIterable {
        case md5 = 1
        case sha256 = 2

        /// OpenSSL's name for it.
        var name: String { self == .md5 ? "MD5" : "SHA256" }
        /// Bytes of a digest.
        var size: Int { self == .md5 ? 16 : 32 }
        public var hexLength: Int { 2 * size }
    }

    /// Lowercase hex of the digest of `bytes`. MD5 refused by OpenSSL (FIPS) is `.unsupported`.
    public static func hex(_ algorithm: Algorithm, _ bytes: [UInt8]) throws(DeviceIDError) -> String {
        Hex.encode(try LibCrypto.hash(algorithm, bytes))
    }

    /// As `hex`, into a caller buffer of at least `hexLength + 1` bytes, without allocating.
    package static func hex(_ algorithm: Algorithm, _ bytes: UnsafeRawBufferPointer,
                            into out: UnsafeMutablePointer<CChar>) throws(DeviceIDError) {
        try LibCrypto.hexDigest(algorithm, bytes, into: out)
    }

    /// As `hex(_:_:into:)` when libcrypto is already loaded and the digest succeeds; false
    /// otherwise, with nothing reported (the caller then takes the checked path).
    package static func hexIfLoaded(_ algorithm: Algorithm, _ bytes: UnsafeRawPointer?, _ count: Int,
                                    into out: UnsafeMutablePointer<CChar>) -> Bool {
        LibCrypto.hexDigestIfLoaded(algorithm, bytes, count, into: out)
    }

    /// Hashing a push token (or any token) with a bundle id, as iOS apps did with theirs:
    /// hex(H(token bytes ‖ UTF-8 bundle id)).
    public static func tokenHash(_ token: [UInt8], bundleID: String, _ algorithm: Algorithm) throws(DeviceIDError) -> String {
        try Names.validate(bundleID, "bundle id")
        return try hex(algorithm, token + Array(bundleID.utf8))
    }
}
