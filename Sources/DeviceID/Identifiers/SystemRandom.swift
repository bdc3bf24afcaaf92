import CDeviceIDPrimitives
import CDeviceIDLibc

/// The kernel's CSPRNG (`getrandom(2)`), through the one loop that calls it (`dids_random_fill`).
enum SystemRandom {
    static func bytes(_ count: Int) throws(DeviceIDError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        try out.withUnsafeMutableBytes { buffer in
            Result { () throws(DeviceIDError) in try fill(buffer) }
        }.get()
        return out
    }

    static func fill(_ buffer: UnsafeMutableRawBufferPointer) throws(DeviceIDError) {
        guard let base = buffer.baseAddress else { return }
        let status = dids_random_fill(base, buffer.count)
        guard status == 0 else {
            throw DeviceIDError(.io, "getrandom failed: \(String(cString: strerror(-status)))")
        }
    }
}
