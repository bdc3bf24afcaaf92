import CDeviceIDPrimitives

/// SHA-256 and HMAC-SHA256 for DeviceID's own derivations (file names and checksums of the file
/// store, the machine fingerprint, the app-specific machine ID), in C (`sha256.c`) as systemd's
/// sd-id128 has its own: a lookup answered from the file store then never starts OpenSSL, whose
/// first use costs about 1 ms. What users ask to be hashed goes through OpenSSL (`LibCrypto`).
enum SHA256 {
    static let size = 32

    /// The digest of a collection, hashed in place when its storage is contiguous (a copy would
    /// leave the bytes — often an envelope holding a secret — in freed memory).
    static func hash<C: Collection>(_ bytes: C) -> [UInt8] where C.Element == UInt8 {
        var out = [UInt8](repeating: 0, count: size)
        let direct: Void? = bytes.withContiguousStorageIfAvailable { buffer in
            out.withUnsafeMutableBufferPointer { dids_sha256(buffer.baseAddress, buffer.count, $0.baseAddress) }
        }
        if direct == nil {
            var copy = Array(bytes)
            defer { wipe(&copy) }
            copy.withUnsafeBufferPointer { buffer in
                out.withUnsafeMutableBufferPointer { dids_sha256(buffer.baseAddress, buffer.count, $0.baseAddress) }
            }
        }
        return out
    }

    /// HMAC-SHA256 (RFC 2104) of `message` under `key`.
    static func hmac(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: size)
        key.withUnsafeBytes { k in
            message.withUnsafeBytes { m in
                out.withUnsafeMutableBufferPointer {
                    dids_hmac_sha256(k.baseAddress, k.count, m.baseAddress, m.count, $0.baseAddress)
                }
            }
        }
        return out
    }
}
