import DeviceID

/// A context's configuration (the process-wide one for NULL), one setting at a time, by the
/// override rule (`DeviceIdentity.override`).
private func reconfigure(_ context: OpaquePointer?, _ change: (inout Configuration.Overrides) -> Void) throws(DeviceIDError) {
    try Context.instance(context).override(change)
}

@_cdecl("deviceid_set_backend")
public func deviceid_set_backend(_ backend: Int32) -> Int32 {
    deviceid_context_set_backend(nil, backend)
}

@_cdecl("deviceid_context_set_backend")
public func deviceid_context_set_backend(_ context: OpaquePointer?, _ backend: Int32) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        guard let value = Configuration.Backend(rawValue: backend) else {
            throw DeviceIDError(.invalidArgument, "unknown backend \(backend)")
        }
        try reconfigure(context) { $0.backend = value }
    }
}

@_cdecl("deviceid_get_backend")
public func deviceid_get_backend() -> Int32 {
    deviceid_context_get_backend(nil)
}

@_cdecl("deviceid_context_get_backend")
public func deviceid_context_get_backend(_ context: OpaquePointer?) -> Int32 {
    do {
        return try Context.instance(context).configuration().backend.rawValue
    } catch {
        return cStatus { () throws(DeviceIDError) in throw error }
    }
}

@_cdecl("deviceid_set_timeout_ms")
public func deviceid_set_timeout_ms(_ milliseconds: UInt32) -> Int32 {
    deviceid_context_set_timeout_ms(nil, milliseconds)
}

@_cdecl("deviceid_context_set_timeout_ms")
public func deviceid_context_set_timeout_ms(_ context: OpaquePointer?, _ milliseconds: UInt32) -> Int32 {
    cStatus { () throws(DeviceIDError) in try reconfigure(context) { $0.timeoutMilliseconds = milliseconds } }
}

@_cdecl("deviceid_set_store_dir")
public func deviceid_set_store_dir(_ path: UnsafePointer<CChar>?) -> Int32 {
    deviceid_context_set_store_dir(nil, path)
}

@_cdecl("deviceid_context_set_store_dir")
public func deviceid_context_set_store_dir(_ context: OpaquePointer?, _ path: UnsafePointer<CChar>?) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        let directory = try path.map { p throws(DeviceIDError) in try CArguments.path(p, "store directory") }
        try reconfigure(context) { $0.storeDirectory = directory }
    }
}

@_cdecl("deviceid_set_interactive")
public func deviceid_set_interactive(_ interactive: Int32, _ timeoutMilliseconds: UInt32) -> Int32 {
    deviceid_context_set_interactive(nil, interactive, timeoutMilliseconds)
}

@_cdecl("deviceid_context_set_interactive")
public func deviceid_context_set_interactive(_ context: OpaquePointer?, _ interactive: Int32,
                                             _ timeoutMilliseconds: UInt32) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        guard interactive == 0 || interactive == 1 else {
            throw DeviceIDError(.invalidArgument, "interactive must be 0 or 1, not \(interactive)")
        }
        try reconfigure(context) {
            $0.interactive = interactive == 1
            $0.interactiveTimeoutMilliseconds = timeoutMilliseconds == 0
                ? Configuration.defaultInteractiveTimeoutMilliseconds : timeoutMilliseconds
        }
    }
}

@_cdecl("deviceid_get_interactive")
public func deviceid_get_interactive() -> Int32 {
    deviceid_context_get_interactive(nil)
}

@_cdecl("deviceid_context_get_interactive")
public func deviceid_context_get_interactive(_ context: OpaquePointer?) -> Int32 {
    do {
        return try Context.instance(context).configuration().interactive ? 1 : 0
    } catch {
        return cStatus { () throws(DeviceIDError) in throw error }
    }
}
