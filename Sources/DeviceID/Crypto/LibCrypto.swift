import CDeviceIDLibraries
import CDeviceIDLibc

/// The digests users ask for (`Digests`), through OpenSSL's libcrypto (loaded on first use), so that
/// OpenSSL's providers and policy (FIPS) apply to them. DeviceID's own derivations use `SHA256`.
///
/// A digest that OpenSSL's configuration refuses (MD5 under FIPS) reports `.unsupported` — never
/// a crash and never a silent substitute.
enum LibCrypto {
    typealias Algorithm = Digests.Algorithm

    /// The digest of `bytes`, through `dids_crypto_digest` (CDeviceIDLibraries/crypto.c): allowed
    /// or refused by OpenSSL's configuration, computed without EVP's dispatch where OpenSSL's own
    /// default provider serves it.
    static func hash(_ algorithm: Algorithm, _ bytes: UnsafeRawBufferPointer) throws(DeviceIDError) -> [UInt8] {
        try OnDemandLibrary.crypto.require()
        var out = [UInt8](repeating: 0, count: algorithm.size)
        let status = out.withUnsafeMutableBufferPointer { outBuffer in
            dids_crypto_digest(algorithm.rawValue, bytes.baseAddress, bytes.count, outBuffer.baseAddress)
        }
        try check(status, algorithm)
        return out
    }

    /// The digest of a collection, hashed in place when its storage is contiguous (arrays and
    /// their slices): a copy would leave the bytes — often an envelope holding a secret — in freed
    /// memory. Other collections are copied, and the copy wiped.
    static func hash<C: Collection>(_ algorithm: Algorithm, _ bytes: C) throws(DeviceIDError) -> [UInt8] where C.Element == UInt8 {
        let direct = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(DeviceIDError) in try hash(algorithm, UnsafeRawBufferPointer(buffer)) }
        }
        if let direct { return try direct.get() }
        var copy = Array(bytes)
        defer { wipe(&copy) }
        return try copy.withUnsafeBytes { buffer in
            Result { () throws(DeviceIDError) in try hash(algorithm, buffer) }
        }.get()
    }

    /// Lowercase hex of the digest of `bytes`, written with a NUL into `out` (room for
    /// 2 × size + 1 bytes): no allocation, for the C ABI's hot path.
    static func hexDigest(_ algorithm: Algorithm, _ bytes: UnsafeRawBufferPointer,
                          into out: UnsafeMutablePointer<CChar>) throws(DeviceIDError) {
        try OnDemandLibrary.crypto.require()
        try check(dids_crypto_hex_digest(algorithm.rawValue, bytes.baseAddress, bytes.count, out), algorithm)
    }

    /// `hexDigest` without its checks, for the C ABI's hot path: true when libcrypto was already
    /// loaded and the digest was written.
    static func hexDigestIfLoaded(_ algorithm: Algorithm, _ bytes: UnsafeRawPointer?, _ count: Int,
                                  into out: UnsafeMutablePointer<CChar>) -> Bool {
        OnDemandLibrary.crypto.isLoaded
            && dids_crypto_hex_digest(algorithm.rawValue, bytes, count, out) == Int32(DIDS_DIGEST_OK)
    }

    private static func check(_ status: Int32, _ algorithm: Algorithm) throws(DeviceIDError) {
        switch status {
        case Int32(DIDS_DIGEST_OK): return
        case Int32(DIDS_DIGEST_REFUSED):
            throw DeviceIDError(.unsupported, "OpenSSL refuses \(algorithm.name) (FIPS mode?)")
        case Int32(DIDS_DIGEST_NO_MEMORY): throw DeviceIDError(.noMemory)
        default: throw DeviceIDError(.unsupported, "OpenSSL could not compute \(algorithm.name)")
        }
    }
}
