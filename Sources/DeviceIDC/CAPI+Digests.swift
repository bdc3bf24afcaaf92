import CDeviceIDFastPaths
import CDeviceIDAPI
import DeviceID

@c @implementation
public func deviceid_mac_address(
    _ interface: UnsafePointer<CChar>?, _ format: UInt32, _ out: UnsafeMutablePointer<CChar>?, _ outSize: Int,
    _ interfaceOut: UnsafeMutablePointer<CChar>?, _ interfaceSize: Int, _ properties: UnsafeMutablePointer<UInt32>?
) -> Int32 {
    let outSize = UInt(bitPattern: outSize)
    let interfaceSize = UInt(bitPattern: interfaceSize)
    return cStatus { () throws(DeviceIDError) in
        guard format & ~UInt32(2) == 0 else { throw DeviceIDError(.invalidArgument, "unknown format bits \(format)") }
        let compact = format & 2 != 0
        guard out != nil else { throw DeviceIDError(.invalidArgument, "output buffer is NULL") }
        // "AABBCCDDEEFF" and a NUL, or DEVICEID_MAC_STRING_MAX for the form with colons.
        let needed = compact ? UInt(12 + 1) : UInt(DEVICEID_MAC_STRING_MAX)
        guard outSize >= needed else { throw DeviceIDError(.bufferTooSmall, "needs \(needed) bytes") }
        let name = try interface.map { p throws(DeviceIDError) in try CArguments.name(p, "interface") }
        let address = try NetworkInterfaces.primaryAddress(interface: name)
        if let interfaceOut { try CArguments.copy(address.interface, to: interfaceOut, size: interfaceSize) }
        try CArguments.copy(address.text(compact: compact), to: out, size: outSize)
        properties?.pointee = CArguments.properties(address)
    }
}

@c @implementation
public func deviceid_mac_md5(
    _ interface: UnsafePointer<CChar>?, _ bundleID: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<CChar>?,
    _ outSize: Int, _ properties: UnsafeMutablePointer<UInt32>?
) -> Int32 {
    let outSize = UInt(bitPattern: outSize)
    return cStatus { () throws(DeviceIDError) in
        guard out != nil else { throw DeviceIDError(.invalidArgument, "output buffer is NULL") }
        guard outSize >= UInt(DEVICEID_MD5_HEX_MAX) else { throw DeviceIDError(.bufferTooSmall, "needs \(DEVICEID_MD5_HEX_MAX) bytes") }
        let name = try interface.map { p throws(DeviceIDError) in try CArguments.name(p, "interface") }
        let bundle = try bundleID.map { p throws(DeviceIDError) in try CArguments.name(p, "bundle id") }
        let address = try NetworkInterfaces.primaryAddress(interface: name)
        try CArguments.copy(try Digests.macMD5(address, bundleID: bundle), to: out, size: outSize)
        properties?.pointee = CArguments.properties(address)
    }
}

@c @implementation
public func deviceid_hash_hex(
    _ algorithm: Int32, _ data: UnsafeRawPointer?, _ size: Int, _ out: UnsafeMutablePointer<CChar>?, _ outSize: Int
) -> Int32 {
    let size = UInt(bitPattern: size)
    let outSize = UInt(bitPattern: outSize)
    // The hot path (MD5 of a MAC and a bundle id, per request): valid arguments, libcrypto loaded
    // and the digest computed in one C call. Anything else, and any failure, takes the checked path.
    if let out, data != nil || size == 0, size <= UInt(Int32.max), let known = Digests.Algorithm(rawValue: algorithm),
       outSize > UInt(known.hexLength), Digests.hexIfLoaded(known, data, Int(size), into: out) {
        dids_set_last_error(nil)
        return 0
    }
    return cStatus { () throws(DeviceIDError) in
        let algorithm = try CArguments.algorithm(algorithm, out, outSize)
        guard size <= UInt(Int32.max) else { throw DeviceIDError(.tooLarge, "\(size) bytes") }
        guard data != nil || size == 0 else { throw DeviceIDError(.invalidArgument, "data is NULL") }
        try Digests.hex(algorithm, UnsafeRawBufferPointer(start: data, count: Int(size)), into: out!)
    }
}

@c @implementation
public func deviceid_token_hash(
    _ algorithm: Int32, _ token: UnsafeRawPointer?, _ tokenSize: Int, _ bundleID: UnsafePointer<CChar>?,
    _ out: UnsafeMutablePointer<CChar>?, _ outSize: Int
) -> Int32 {
    let tokenSize = UInt(bitPattern: tokenSize)
    let outSize = UInt(bitPattern: outSize)
    return cStatus { () throws(DeviceIDError) in
        let algorithm = try CArguments.algorithm(algorithm, out, outSize)
        let bytes = try CArguments.bytes(token, tokenSize)
        let bundle = try CArguments.name(bundleID, "bundle id")
        try CArguments.copy(try Digests.tokenHash(bytes, bundleID: bundle, algorithm), to: out, size: outSize)
    }
}
