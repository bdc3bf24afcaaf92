import CDeviceIDFastPaths
import CDeviceIDAPI
import DeviceID

@c @implementation
public func deviceid_machine_app_specific(
    _ appID: UnsafePointer<CChar>?, _ format: UInt32, _ out: UnsafeMutablePointer<CChar>?, _ outSize: Int
) -> Int32 {
    let outSize = UInt(bitPattern: outSize)
    // The machine ID does not change while the system runs: answers are cached per thread.
    let kind = AnswerCache.Kind.appSpecific(format: format)
    if AnswerCache.lookup(kind, appID, into: out, size: outSize) {
        dids_set_last_error(nil)
        return 0
    }
    let generation = AnswerCache.generation()
    return cStatus { () throws(DeviceIDError) in
        let options = try CArguments.format(format)
        try CArguments.checkUUIDBuffer(out, outSize, compact: options.compact)
        let app = try MachineID.appID(from: try CArguments.name(appID, "app id"))
        let id = try MachineID.appSpecific(app)
        try CArguments.copy(id.format(uppercase: options.uppercase, dashes: !options.compact), to: out, size: outSize)
        AnswerCache.store(kind, appID, generation: generation, answer: out)
    }
}

@c @implementation
public func deviceid_machine_id_raw(_ format: UInt32, _ out: UnsafeMutablePointer<CChar>?, _ outSize: Int) -> Int32 {
    let outSize = UInt(bitPattern: outSize)
    return cStatus { () throws(DeviceIDError) in try CArguments.copy(try MachineID.raw(), format: format, to: out, size: outSize) }
}

@c @implementation
public func deviceid_product_uuid_raw(_ format: UInt32, _ out: UnsafeMutablePointer<CChar>?, _ outSize: Int) -> Int32 {
    let outSize = UInt(bitPattern: outSize)
    return cStatus { () throws(DeviceIDError) in try CArguments.copy(try ProductUUID.raw(), format: format, to: out, size: outSize) }
}
