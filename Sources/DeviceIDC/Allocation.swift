import DeviceID
import CDeviceIDLibc

/// Memory handed to C callers: a 16-byte header (magic, size) before the bytes, so that
/// `deviceid_free` can wipe exactly what it frees.
enum Allocation {
    private static let header = 16
    private static let magic: UInt64 = 0x4449_4445_4349_5645  // "EVICEDID", little endian
    private static let freed: UInt64 = 0xDEAD_DEAD_DEAD_DEAD

    /// A copy of `bytes`, followed by a NUL that is not counted.
    static func copy(_ bytes: [UInt8]) -> UnsafeMutableRawPointer? {
        guard let base = malloc(header + bytes.count + 1) else { return nil }
        base.storeBytes(of: magic, toByteOffset: 0, as: UInt64.self)
        base.storeBytes(of: UInt64(bytes.count), toByteOffset: 8, as: UInt64.self)
        let data = base + header
        bytes.withUnsafeBytes { source in
            if let s = source.baseAddress { data.copyMemory(from: s, byteCount: source.count) }
        }
        data.storeBytes(of: 0, toByteOffset: bytes.count, as: UInt8.self)
        return data
    }

    static func free(_ pointer: UnsafeMutableRawPointer?) {
        guard let pointer else { return }
        let base = pointer - header
        // Not ours, or already freed: the documented undefined case. Leak rather than corrupt.
        guard base.load(fromByteOffset: 0, as: UInt64.self) == magic else { return }
        let size = Int(base.load(fromByteOffset: 8, as: UInt64.self))
        SecretMemory.wipe(UnsafeMutableRawBufferPointer(start: base, count: header + size + 1))
        base.storeBytes(of: freed, toByteOffset: 0, as: UInt64.self)
        CDeviceIDLibc.free(base)
    }
}
