import CDeviceIDLibc

/// Turns a failed system call into a DeviceIDError, the one place errno gets a DeviceID name.
enum SystemCall {
    static func error(_ operation: String, _ path: Words, errno code: Int32 = errno) -> DeviceIDError {
        let reason = String(cString: strerror(code))
        let detail: Words = "\(operation) \(path): \(reason)"
        switch code {
        case EACCES, EPERM: return DeviceIDError(.permission, detail)
        case ELOOP: return DeviceIDError(.permission, "\(path) is a symbolic link; refusing to follow it")
        case ENOMEM: return DeviceIDError(.noMemory, detail)
        default: return DeviceIDError(.io, detail)
        }
    }

    @_disfavoredOverload
    static func error<Path: StringProtocol>(_ operation: String, _ path: Path, errno code: Int32 = errno) -> DeviceIDError {
        error(operation, Words(String(path)), errno: code)
    }

    /// Retries a call interrupted by a signal.
    @inline(__always)
    static func retrying<T: BinaryInteger>(_ body: () -> T) -> T {
        while true {
            let result = body()
            if result >= 0 || errno != EINTR { return result }
        }
    }
}
