import DeviceID

@_cdecl("deviceid_get")
public func deviceid_get(_ appID: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<CChar>?, _ outSize: UInt) -> Int32 {
    deviceid_get_ex(appID, out, outSize, nil)
}

@_cdecl("deviceid_get_ex")
public func deviceid_get_ex(
    _ appID: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<CChar>?, _ outSize: UInt,
    _ source: UnsafeMutablePointer<Int32>?
) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        let app = try CArguments.name(appID, "app id")
        guard out != nil else { throw DeviceIDError(.invalidArgument, "output buffer is NULL") }
        guard outSize >= UInt(ID128.stringLength + 1) else {
            throw DeviceIDError(.bufferTooSmall, "needs \(ID128.stringLength + 1) bytes, got \(outSize)")
        }
        let answer = try DeviceIdentity.shared.stableID(for: app)
        try CArguments.copy(answer.uuidString, to: out, size: outSize)
        source?.pointee = answer.source.rawValue
    }
}

@_cdecl("deviceid_reset")
public func deviceid_reset(_ appID: UnsafePointer<CChar>?) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        try DeviceIdentity.shared.reset(appID: try CArguments.name(appID, "app id"))
    }
}
