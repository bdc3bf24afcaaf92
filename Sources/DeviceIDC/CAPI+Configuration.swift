import CDeviceIDAPI
import DeviceID

/// A context's configuration (the process-wide one for NULL), one setting at a time, by the
/// override rule (`DeviceIdentity.override`).
private func reconfigure(_ context: OpaquePointer?, _ change: (inout Configuration.Overrides) -> Void) throws(DeviceIDError) {
    try Context.instance(context).override(change)
}

/// A getter's answer: the value (0 or more), or the configuration's status.
private func read(_ context: OpaquePointer?, _ value: (Configuration) -> Int32) -> Int32 {
    var answer: Int32 = 0
    let status = cStatus { () throws(DeviceIDError) in answer = value(try Context.instance(context).configuration()) }
    return status < 0 ? status : answer
}

@c @implementation
public func deviceid_set_backend(_ context: OpaquePointer?, _ backend: Int32) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        guard let value = Configuration.Backend(rawValue: backend) else {
            throw DeviceIDError(.invalidArgument, "unknown backend \(backend)")
        }
        try reconfigure(context) { $0.backend = value }
    }
}

@c @implementation
public func deviceid_get_backend(_ context: OpaquePointer?) -> Int32 {
    read(context) { $0.backend.rawValue }
}

@c @implementation
public func deviceid_set_timeout_ms(_ context: OpaquePointer?, _ milliseconds: UInt32) -> Int32 {
    cStatus { () throws(DeviceIDError) in try reconfigure(context) { $0.timeoutMilliseconds = milliseconds } }
}

@c @implementation
public func deviceid_get_timeout_ms(_ context: OpaquePointer?, _ milliseconds: UnsafeMutablePointer<UInt32>?) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        guard let milliseconds else { throw DeviceIDError(.invalidArgument, "milliseconds is NULL") }
        milliseconds.pointee = try Context.instance(context).configuration().timeoutMilliseconds
    }
}

@c @implementation
public func deviceid_set_store_dir(_ context: OpaquePointer?, _ path: UnsafePointer<CChar>?) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        let directory = try path.map { p throws(DeviceIDError) in try CArguments.path(p, "store directory") }
        try reconfigure(context) { $0.storeDirectory = directory }
    }
}

@c @implementation
public func deviceid_set_interactive(_ context: OpaquePointer?, _ interactive: Int32, _ timeoutMilliseconds: UInt32) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        let on = try CArguments.flag(interactive, "interactive")
        try reconfigure(context) {
            $0.interactive = on
            $0.interactiveTimeoutMilliseconds = timeoutMilliseconds == 0
                ? Configuration.defaultInteractiveTimeoutMilliseconds : timeoutMilliseconds
        }
    }
}

@c @implementation
public func deviceid_get_interactive(_ context: OpaquePointer?) -> Int32 {
    read(context) { $0.interactive ? 1 : 0 }
}

@c @implementation
public func deviceid_set_protection(_ context: OpaquePointer?, _ protection: Int32) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        guard let value = Configuration.Protection(rawValue: protection) else {
            throw DeviceIDError(.invalidArgument, "unknown protection \(protection)")
        }
        try reconfigure(context) { $0.protection = value }
    }
}

@c @implementation
public func deviceid_get_protection(_ context: OpaquePointer?) -> Int32 {
    read(context) { $0.protection.rawValue }
}
