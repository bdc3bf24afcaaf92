import CDeviceIDAPI
import CDeviceIDFastPaths
import CDeviceIDSystem
@_spi(CEntryPoints) import DeviceID
import CDeviceIDLibc

/// Reading what C callers pass, without trusting any of it.
enum CArguments {
    /// A NUL-terminated UTF-8 name of at most DEVICEID_NAME_MAX - 1 bytes. `strnlen` bounds the
    /// scan, so a 1 MiB string costs 256 bytes of reading before it is refused. (The library's own
    /// rules, `Names`, check the same length again, and control characters.)
    static func name(_ pointer: UnsafePointer<CChar>?, _ what: String) throws(DeviceIDError) -> String {
        guard let pointer else { throw DeviceIDError(.invalidArgument, "\(what) is NULL") }
        let longest = Int(DEVICEID_NAME_MAX) - 1
        let length = strnlen(pointer, longest + 1)
        guard length <= longest else {
            throw DeviceIDError(.invalidArgument, "\(what) is longer than \(longest) bytes")
        }
        let bytes = UnsafeRawBufferPointer(start: pointer, count: length).bindMemory(to: UInt8.self)
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw DeviceIDError(.invalidArgument, "\(what) is not valid UTF-8")
        }
        return text
    }

    /// An absolute path of fewer than DEVICEID_PATH_MAX bytes.
    static func path(_ pointer: UnsafePointer<CChar>, _ what: String) throws(DeviceIDError) -> String {
        let length = strnlen(pointer, Int(DEVICEID_PATH_MAX))
        guard length < Int(DEVICEID_PATH_MAX) else { throw DeviceIDError(.invalidArgument, "\(what) is too long") }
        let bytes = UnsafeRawBufferPointer(start: pointer, count: length).bindMemory(to: UInt8.self)
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw DeviceIDError(.invalidArgument, "\(what) is not valid UTF-8")
        }
        return text
    }

    /// A NUL-terminated UTF-8 message of at most `limit` bytes (an attestation wire message).
    static func text(_ pointer: UnsafePointer<CChar>?, _ what: String, limit: Int = Int(DEVICEID_MESSAGE_MAX))
        throws(DeviceIDError) -> String {
        guard let pointer else { throw DeviceIDError(.invalidArgument, "\(what) is NULL") }
        let length = strnlen(pointer, limit + 1)
        guard length <= limit else { throw DeviceIDError(.invalidArgument, "\(what) is longer than \(limit) bytes") }
        let bytes = UnsafeRawBufferPointer(start: pointer, count: length).bindMemory(to: UInt8.self)
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw DeviceIDError(.invalidArgument, "\(what) is not valid UTF-8")
        }
        return text
    }

    /// A C boolean that must be 0 or 1, as the header says: 2 or -1 is more likely a mistake than a yes.
    static func flag(_ value: Int32, _ what: String) throws(DeviceIDError) -> Bool {
        guard value == 0 || value == 1 else { throw DeviceIDError(.invalidArgument, "\(what) must be 0 or 1, not \(value)") }
        return value == 1
    }

    struct Format {
        var uppercase: Bool
        var compact: Bool
    }

    /// DEVICEID_FORMAT_* bits; unknown bits are refused rather than ignored.
    static func format(_ bits: UInt32) throws(DeviceIDError) -> Format {
        guard bits & ~UInt32(3) == 0 else { throw DeviceIDError(.invalidArgument, "unknown format bits \(bits)") }
        return Format(uppercase: bits & 1 != 0, compact: bits & 2 != 0)
    }

    /// A UUID output buffer: not NULL, room for DEVICEID_UUID_STRING_MAX bytes (32 hex digits and
    /// a NUL for the compact form).
    static func checkUUIDBuffer(_ out: UnsafeMutablePointer<CChar>?, _ size: UInt, compact: Bool = false) throws(DeviceIDError) {
        guard out != nil else { throw DeviceIDError(.invalidArgument, "output buffer is NULL") }
        let needed = UInt(DEVICEID_UUID_STRING_MAX) - (compact ? 4 : 0)  // no dashes
        guard size >= needed else { throw DeviceIDError(.bufferTooSmall, "needs \(needed) bytes, got \(size)") }
    }

    /// Writes `id` in the DEVICEID_FORMAT_* form `bits` asks for.
    static func copy(_ id: ID128, format bits: UInt32, to out: UnsafeMutablePointer<CChar>?, size: UInt) throws(DeviceIDError) {
        let options = try format(bits)
        try checkUUIDBuffer(out, size, compact: options.compact)
        try copy(id.format(uppercase: options.uppercase, dashes: !options.compact), to: out, size: size)
    }

    /// Caller bytes: NULL only with size 0; at most 2^31 bytes.
    static func bytes(_ data: UnsafeRawPointer?, _ size: UInt) throws(DeviceIDError) -> [UInt8] {
        guard size <= UInt(Int32.max) else { throw DeviceIDError(.tooLarge, "\(size) bytes") }
        guard let data else {
            guard size == 0 else { throw DeviceIDError(.invalidArgument, "data is NULL") }
            return []
        }
        return Array(UnsafeRawBufferPointer(start: data, count: Int(size)))
    }

    /// DEVICEID_HASH_*, with its output buffer checked.
    static func algorithm(_ value: Int32, _ out: UnsafeMutablePointer<CChar>?, _ size: UInt) throws(DeviceIDError) -> Digests.Algorithm {
        guard let algorithm = Digests.Algorithm(rawValue: value) else {
            throw DeviceIDError(.invalidArgument, "unknown hash algorithm \(value)")
        }
        guard out != nil else { throw DeviceIDError(.invalidArgument, "output buffer is NULL") }
        guard size > UInt(algorithm.hexLength) else {
            throw DeviceIDError(.bufferTooSmall, "needs \(algorithm.hexLength + 1) bytes, got \(size)")
        }
        return algorithm
    }

    /// DEVICEID_MAC_* bits.
    static func properties(_ address: MACAddress) -> UInt32 {
        (address.isPermanent ? 1 : 0) | (address.isWeak ? 2 : 0)
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

/// Run before every fork (`dids_fork_settle`): the process-wide instance every entry point uses,
/// the library's lazily made locks and the list of contexts are initialised, or their initialisation by another thread waited
/// for, so that a child forked during another thread's first call does not find them half-made.
/// A function, not a closure in a global: a global is itself initialised lazily.
private func settleBeforeFork() {
    _ = DeviceIdentity.shared
    LazyGlobals.settle()
    Context.settle()
}

/// Runs a C entry point's body: every DeviceIDError becomes its status, with its detail kept for
/// `deviceid_last_error()`.
@inline(__always)
func cStatus(_ body: () throws(DeviceIDError) -> Void) -> Int32 {
    dids_fork_settle(settleBeforeFork)
    do {
        try body()
        dids_set_last_error(nil)
        return 0
    } catch {
        dids_set_last_error(error.detail)
        return error.code.rawValue
    }
}
