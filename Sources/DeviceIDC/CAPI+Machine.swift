import DeviceID

@_cdecl("deviceid_machine_app_specific")
public func deviceid_machine_app_specific(
    _ appID: UnsafePointer<CChar>?, _ format: UInt32, _ out: UnsafeMutablePointer<CChar>?, _ outSize: UInt
) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        let options = try CArguments.format(format)
        try CArguments.checkUUIDBuffer(out, outSize, compact: options.compact)
        let app = try MachineID.appID(from: try CArguments.name(appID, "app id"))
        let id = try MachineID.appSpecific(app)
        try CArguments.copy(id.format(uppercase: options.uppercase, dashes: !options.compact), to: out, size: outSize)
    }
}

@_cdecl("deviceid_machine_id_raw")
public func deviceid_machine_id_raw(_ format: UInt32, _ out: UnsafeMutablePointer<CChar>?, _ outSize: UInt) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        let options = try CArguments.format(format)
        try CArguments.checkUUIDBuffer(out, outSize, compact: options.compact)
        let id = try MachineID.raw()
        try CArguments.copy(id.format(uppercase: options.uppercase, dashes: !options.compact), to: out, size: outSize)
    }
}

@_cdecl("deviceid_product_uuid_raw")
public func deviceid_product_uuid_raw(_ format: UInt32, _ out: UnsafeMutablePointer<CChar>?, _ outSize: UInt) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        let options = try CArguments.format(format)
        try CArguments.checkUUIDBuffer(out, outSize, compact: options.compact)
        let id = try ProductUUID.raw()
        try CArguments.copy(id.format(uppercase: options.uppercase, dashes: !options.compact), to: out, size: outSize)
    }
}
