import CDeviceIDFastPaths
import DeviceID

// Where the process runs and what survives what there (include/deviceid.h, "Environment").

@_cdecl("deviceid_environment_kind")
public func deviceid_environment_kind() -> Int32 {
    Surroundings.current().kind.rawValue
}

@_cdecl("deviceid_environment_kind_name")
public func deviceid_environment_kind_name(_ kind: Int32) -> UnsafePointer<CChar> {
    StaticText.pointer(Surroundings.Kind(rawValue: kind)?.staticName ?? "unknown")
}

@_cdecl("deviceid_environment_name")
public func deviceid_environment_name(_ out: UnsafeMutablePointer<CChar>?, _ outSize: UInt) -> Int32 {
    cStatus { () throws(DeviceIDError) in try CArguments.copy(Surroundings.current().name, to: out, size: outSize) }
}

@_cdecl("deviceid_environment_machine_id_weak")
public func deviceid_environment_machine_id_weak(_ reason: UnsafeMutablePointer<CChar>?, _ reasonSize: UInt) -> Int32 {
    let origin = Surroundings.current().machineID
    let status = cStatus { () throws(DeviceIDError) in
        if let reason { try CArguments.copy(origin.detail, to: reason, size: reasonSize) }
    }
    return status < 0 ? status : (origin.weak ? 1 : 0)
}

/// The report with the portal and keyring asked: what the three functions below share.
private func report() throws(DeviceIDError) -> EnvironmentReport { try DeviceIdentity.shared.environment() }

@_cdecl("deviceid_environment_portal")
public func deviceid_environment_portal() -> Int32 {
    var state: Int32 = 0
    var detail = ""
    let status = cStatus { () throws(DeviceIDError) in
        let environment = try report()
        state = environment.portal.rawValue
        detail = environment.portalDetail
    }
    // Why, for deviceid_last_error().
    if status == 0, !detail.isEmpty { dids_set_last_error(detail) }
    return status < 0 ? status : state
}

@_cdecl("deviceid_environment_store_location")
public func deviceid_environment_store_location(_ path: UnsafeMutablePointer<CChar>?, _ pathSize: UInt) -> Int32 {
    var location: Int32 = 0
    let status = cStatus { () throws(DeviceIDError) in
        let store = try DeviceIdentity.shared.store()
        if let path { try CArguments.copy(store.path, to: path, size: pathSize) }
        location = store.location.rawValue
    }
    return status < 0 ? status : location
}

@_cdecl("deviceid_environment_stable_id_location")
public func deviceid_environment_stable_id_location() -> Int32 {
    var location: Int32 = 0
    let status = cStatus { () throws(DeviceIDError) in location = try report().stableIDLocation.rawValue }
    return status < 0 ? status : location
}

@_cdecl("deviceid_identifier_location")
public func deviceid_identifier_location(_ scope: Int32, _ name: UnsafePointer<CChar>?) -> Int32 {
    deviceid_context_identifier_location(nil, scope, name)
}

@_cdecl("deviceid_context_identifier_location")
public func deviceid_context_identifier_location(_ context: OpaquePointer?, _ scope: Int32,
                                                 _ name: UnsafePointer<CChar>?) -> Int32 {
    var location: Int32 = 0
    let status = cStatus { () throws(DeviceIDError) in
        guard let scope = Scope(rawValue: scope) else { throw DeviceIDError(.invalidArgument, "unknown scope \(scope)") }
        let text = scope == .advertising ? nil : try CArguments.name(name, scope == .vendor ? "vendor id" : "app id")
        location = try Context.instance(context).identifier(scope: scope, name: text).location.rawValue
    }
    return status < 0 ? status : location
}

@_cdecl("deviceid_location_name")
public func deviceid_location_name(_ location: Int32) -> UnsafePointer<CChar> {
    StaticText.pointer(StorageLocation(rawValue: location)?.staticName ?? "unknown")
}

@_cdecl("deviceid_location_survives")
public func deviceid_location_survives(_ location: Int32) -> UInt32 {
    guard let location = StorageLocation(rawValue: location) else { return 0 }
    return (location.survivesAppDataRemoval ? 1 : 0) | (location.survivesContainerRemoval ? 2 : 0)
}

@_cdecl("deviceid_portal_state_name")
public func deviceid_portal_state_name(_ state: Int32) -> UnsafePointer<CChar> {
    StaticText.pointer(EnvironmentReport.PortalState(rawValue: state)?.staticName ?? "unknown")
}
