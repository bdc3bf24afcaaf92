import CDeviceIDLibraries
import CDeviceIDLibc

/// The digests users ask for (`Digests`), through OpenSSL's libcrypto (loaded on first use), so that
/// OpenSSL's providers and policy (FIPS) apply to them. DeviceID's own derivations use `SHA256`.
///
/// Digests are fetched once per process: `dids_EVP_md5()`-style lookups on every call cost twice the
/// hash itself here. A digest that the loaded provider refuses (MD5 under FIPS) reports
/// `.unsupported` — never a crash and never a silent substitute.
enum LibCrypto {
    typealias Algorithm = Digests.Algorithm

    private struct FetchedDigest: @unchecked Sendable {
        // EVP_MD objects are immutable once fetched and safe to share between threads.
        let pointer: OpaquePointer?
        init(_ name: String) { pointer = dids_EVP_MD_fetch(nil, name, nil) }
    }

    private static let md5 = FetchedDigest("MD5")
    private static let sha256 = FetchedDigest("SHA256")

    private static func digest(_ algorithm: Algorithm) throws(DeviceIDError) -> OpaquePointer {
        try OnDemandLibrary.crypto.require()
        let fetched = algorithm == .md5 ? md5 : sha256
        guard let md = fetched.pointer else {
            throw DeviceIDError(.unsupported, "OpenSSL refuses \(algorithm.name) (FIPS mode?)")
        }
        return md
    }

    /// The digest of `bytes`.
    static func hash(_ algorithm: Algorithm, _ bytes: UnsafeRawBufferPointer) throws(DeviceIDError) -> [UInt8] {
        let md = try digest(algorithm)
        var out = [UInt8](repeating: 0, count: algorithm.size)
        var length: UInt32 = 0
        let ok = out.withUnsafeMutableBufferPointer { outBuffer in
            dids_EVP_Digest(bytes.baseAddress, bytes.count, outBuffer.baseAddress, &length, md, nil)
        }
        guard ok == 1, Int(length) == algorithm.size else {
            throw DeviceIDError(.unsupported, "OpenSSL could not compute \(algorithm.name)")
        }
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

    /// A digest context per thread, reused by `hexDigest`: initialising a context on a fetched
    /// digest costs a third of a one-shot EVP_Digest here. Freed when the thread exits.
    private struct ContextKey: @unchecked Sendable {
        var key = pthread_key_t()
        init() { pthread_key_create(&key) { dids_EVP_MD_CTX_free(OpaquePointer($0)) } }
    }
    private static let contextKey = ContextKey()

    private static func threadContext() -> OpaquePointer? {
        if let existing = pthread_getspecific(contextKey.key) { return OpaquePointer(existing) }
        guard let created = dids_EVP_MD_CTX_new() else { return nil }
        pthread_setspecific(contextKey.key, UnsafeRawPointer(created))
        return created
    }

    /// Lowercase hex of the digest of `bytes`, written with a NUL into `out` (room for
    /// 2 × size + 1 bytes): no allocation, for the C ABI's hot path.
    static func hexDigest(_ algorithm: Algorithm, _ bytes: UnsafeRawBufferPointer,
                          into out: UnsafeMutablePointer<CChar>) throws(DeviceIDError) {
        let md = try digest(algorithm)
        guard let ctx = threadContext() else { throw DeviceIDError(.noMemory) }
        var raw: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        var length: UInt32 = 0
        let ok = withUnsafeMutableBytes(of: &raw) { r in
            dids_EVP_DigestInit_ex2(ctx, md, nil) == 1
                && dids_EVP_DigestUpdate(ctx, bytes.baseAddress, bytes.count) == 1
                && dids_EVP_DigestFinal_ex(ctx, r.baseAddress!.assumingMemoryBound(to: UInt8.self), &length) == 1
        }
        guard ok, Int(length) == algorithm.size else {
            throw DeviceIDError(.unsupported, "OpenSSL could not compute \(algorithm.name)")
        }
        withUnsafeBytes(of: raw) { r in Hex.write(UnsafeRawBufferPointer(rebasing: r[0..<algorithm.size]), into: out) }
    }
}
