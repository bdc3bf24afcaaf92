import DeviceID

@_cdecl("deviceid_vendor_id")
public func deviceid_vendor_id(_ vendor: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<CChar>?, _ outSize: UInt) -> Int32 {
    deviceid_identifier(Scope.vendor.rawValue, vendor, out, outSize, nil, nil)
}

@_cdecl("deviceid_vendor_reset")
public func deviceid_vendor_reset(_ vendor: UnsafePointer<CChar>?) -> Int32 {
    deviceid_identifier_reset(Scope.vendor.rawValue, vendor)
}

@_cdecl("deviceid_advertising_id")
public func deviceid_advertising_id(_ out: UnsafeMutablePointer<CChar>?, _ outSize: UInt) -> Int32 {
    deviceid_identifier(Scope.advertising.rawValue, nil, out, outSize, nil, nil)
}

@_cdecl("deviceid_advertising_reset")
public func deviceid_advertising_reset() -> Int32 {
    deviceid_identifier_reset(Scope.advertising.rawValue, nil)
}

@_cdecl("deviceid_advertising_set_limited")
public func deviceid_advertising_set_limited(_ limited: Int32) -> Int32 {
    cStatus { () throws(DeviceIDError) in try DeviceIdentity.shared.setAdvertisingTrackingLimited(limited != 0) }
}

@_cdecl("deviceid_advertising_is_limited")
public func deviceid_advertising_is_limited() -> Int32 {
    var limited = false
    let status = cStatus { () throws(DeviceIDError) in limited = try DeviceIdentity.shared.isAdvertisingTrackingLimited() }
    return status < 0 ? status : (limited ? 1 : 0)
}

@_cdecl("deviceid_openudid")
public func deviceid_openudid(_ appID: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<CChar>?, _ outSize: UInt) -> Int32 {
    deviceid_identifier(Scope.openUDID.rawValue, appID, out, outSize, nil, nil)
}

@_cdecl("deviceid_openudid_set_opt_out")
public func deviceid_openudid_set_opt_out(_ appID: UnsafePointer<CChar>?, _ optOut: Int32) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        try DeviceIdentity.shared.setOpenUDIDOptOut(optOut != 0, for: try CArguments.name(appID, "app id"))
    }
}
