import CDeviceIDLibc
import CDeviceIDPrimitives
import CDeviceIDAPI
import DeviceID

@c @implementation
public func deviceid_uuid_generate(_ out: UnsafeMutablePointer<CChar>?, _ outSize: Int, _ format: UInt32) -> Int32 {
    let outSize = UInt(bitPattern: outSize)
    return cStatus { () throws(DeviceIDError) in
        let options = try CArguments.format(format)
        try CArguments.checkUUIDBuffer(out, outSize, compact: options.compact)
        // A thread-local pool of getrandom bytes: one system call per 16 UUIDs.
        let r = dids_uuid4_text(out, options.uppercase ? 1 : 0, options.compact ? 1 : 0)
        guard r == 0 else { throw DeviceIDError(.io, "getrandom failed (errno \(-r))") }
    }
}

@c @implementation
public func deviceid_uuid_parse(_ text: UnsafePointer<CChar>?, _ bytes: UnsafeMutablePointer<UInt8>?) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        guard let text, let bytes else { throw DeviceIDError(.invalidArgument, "text or bytes is NULL") }
        let length = strnlen(text, Int(DEVICEID_UUID_STRING_MAX))
        let utf8 = UnsafeRawBufferPointer(start: text, count: length)
        guard length < Int(DEVICEID_UUID_STRING_MAX), let id = ID128(parsing: String(decoding: utf8, as: UTF8.self)) else {
            throw DeviceIDError(.invalidArgument, "not a UUID")
        }
        for (i, byte) in id.array.enumerated() { bytes[i] = byte }
    }
}

@c @implementation
public func deviceid_uuid_format(
    _ bytes: UnsafePointer<UInt8>?, _ format: UInt32, _ out: UnsafeMutablePointer<CChar>?, _ outSize: Int
) -> Int32 {
    let outSize = UInt(bitPattern: outSize)
    return cStatus { () throws(DeviceIDError) in
        guard let bytes else { throw DeviceIDError(.invalidArgument, "bytes is NULL") }
        let options = try CArguments.format(format)
        let id = ID128(bytes: Array(UnsafeBufferPointer(start: bytes, count: ID128.byteCount)))!
        try CArguments.copy(id.format(uppercase: options.uppercase, dashes: !options.compact), to: out, size: outSize)
    }
}
