import CDeviceIDSupport
import DeviceID
import Glibc

/// Reading what C callers pass, without trusting any of it.
enum CArguments {
    /// A NUL-terminated UTF-8 name of at most `Names.maximumLength` bytes. `strnlen` bounds the
    /// scan, so a 1 MiB string costs 256 bytes of reading before it is refused.
    static func name(_ pointer: UnsafePointer<CChar>?, _ what: String) throws(DeviceIDError) -> String {
        guard let pointer else { throw DeviceIDError(.invalidArgument, "\(what) is NULL") }
        let length = strnlen(pointer, Names.maximumLength + 1)
        guard length <= Names.maximumLength else {
            throw DeviceIDError(.invalidArgument, "\(what) is longer than \(Names.maximumLength) bytes")
        }
        let bytes = UnsafeRawBufferPointer(start: pointer, count: length).bindMemory(to: UInt8.self)
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw DeviceIDError(.invalidArgument, "\(what) is not valid UTF-8")
        }
        return text
    }

    /// An absolute path of at most PATH_MAX bytes.
    static func path(_ pointer: UnsafePointer<CChar>, _ what: String) throws(DeviceIDError) -> String {
        let length = strnlen(pointer, Int(PATH_MAX))
        guard length < Int(PATH_MAX) else { throw DeviceIDError(.invalidArgument, "\(what) is too long") }
        let bytes = UnsafeRawBufferPointer(start: pointer, count: length).bindMemory(to: UInt8.self)
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw DeviceIDError(.invalidArgument, "\(what) is not valid UTF-8")
        }
        return text
    }

    /// Copies `text` and a NUL into a caller buffer of `size` bytes.
    static func copy(_ text: String, to out: UnsafeMutablePointer<CChar>?, size: UInt) throws(DeviceIDError) {
        guard let out else { throw DeviceIDError(.invalidArgument, "output buffer is NULL") }
        let utf8 = Array(text.utf8)
        guard size > UInt(utf8.count) else {
            throw DeviceIDError(.bufferTooSmall, "needs \(utf8.count + 1) bytes, got \(size)")
        }
        utf8.withUnsafeBytes { bytes in
            UnsafeMutableRawPointer(out).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        }
        out[utf8.count] = 0
    }
}

/// Runs a C entry point's body: every DeviceIDError becomes its status, with its detail kept for
/// `deviceid_last_error()`.
@inline(__always)
func cStatus(_ body: () throws(DeviceIDError) -> Void) -> Int32 {
    do {
        try body()
        dids_set_last_error(nil)
        return 0
    } catch {
        dids_set_last_error(error.detail)
        return error.code.rawValue
    }
}
