import CDeviceIDAPI
import DeviceID

// Settings kept like the IDs, per context: "limit ad tracking" and the OpenUDID opt-out.

/// A yes/no getter's answer: 1 or 0, or the status.
private func answer(_ body: () throws(DeviceIDError) -> Bool) -> Int32 {
    var yes = false
    let status = cStatus { () throws(DeviceIDError) in yes = try body() }
    return status < 0 ? status : (yes ? 1 : 0)
}

@c @implementation
public func deviceid_set_advertising_limited(_ context: OpaquePointer?, _ limited: Int32) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        try Context.instance(context).setAdvertisingTrackingLimited(try CArguments.flag(limited, "limited"))
    }
}

@c @implementation
public func deviceid_get_advertising_limited(_ context: OpaquePointer?) -> Int32 {
    answer { () throws(DeviceIDError) in try Context.instance(context).isAdvertisingTrackingLimited() }
}

@c @implementation
public func deviceid_set_openudid_opt_out(_ context: OpaquePointer?, _ appID: UnsafePointer<CChar>?, _ optOut: Int32) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        let app = try CArguments.name(appID, "app id")
        try Context.instance(context).setOpenUDIDOptOut(try CArguments.flag(optOut, "opt_out"), for: app)
    }
}

@c @implementation
public func deviceid_get_openudid_opt_out(_ context: OpaquePointer?, _ appID: UnsafePointer<CChar>?) -> Int32 {
    answer { () throws(DeviceIDError) in
        try Context.instance(context).isOpenUDIDOptedOut(try CArguments.name(appID, "app id"))
    }
}
