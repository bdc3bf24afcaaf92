import CDeviceIDSupport
import Glibc

/// The kernel's CSPRNG, through one `getrandom(2)` call per request.
enum SystemRandom {
    static func bytes(_ count: Int) throws(DeviceIDError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        try out.withUnsafeMutableBytes { buffer in
            Result { () throws(DeviceIDError) in try fill(buffer) }
        }.get()
        return out
    }

    static func fill(_ buffer: UnsafeMutableRawBufferPointer) throws(DeviceIDError) {
        var offset = 0
        while offset < buffer.count {
            let n = getrandom(buffer.baseAddress! + offset, buffer.count - offset, 0)
            if n < 0 {
                if errno == EINTR { continue }
                throw DeviceIDError(.io, "getrandom failed: \(String(cString: strerror(errno)))")
            }
            offset += n
        }
    }
}
