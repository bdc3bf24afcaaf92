import DeviceID

/// The shared instance's configuration, one setting at a time, by the override rule
/// (`DeviceIdentity.override`).
private func reconfigure(_ change: (inout Configuration.Overrides) -> Void) throws(DeviceIDError) {
    try DeviceIdentity.shared.override(change)
}

@_cdecl("deviceid_set_backend")
public func deviceid_set_backend(_ backend: Int32) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        guard let value = Configuration.Backend(rawValue: backend) else {
            throw DeviceIDError(.invalidArgument, "unknown backend \(backend)")
        }
        try reconfigure { $0.backend = value }
    }
}

@_cdecl("deviceid_get_backend")
public func deviceid_get_backend() -> Int32 {
    do {
        return try DeviceIdentity.shared.configuration().backend.rawValue
    } catch {
        return cStatus { () throws(DeviceIDError) in throw error }
    }
}

@_cdecl("deviceid_set_timeout_ms")
public func deviceid_set_timeout_ms(_ milliseconds: UInt32) -> Int32 {
    cStatus { () throws(DeviceIDError) in try reconfigure { $0.timeoutMilliseconds = milliseconds } }
}

@_cdecl("deviceid_set_store_dir")
public func deviceid_set_store_dir(_ path: UnsafePointer<CChar>?) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        let directory = try path.map { p throws(DeviceIDError) in try CArguments.path(p, "store directory") }
        try reconfigure { $0.storeDirectory = directory }
    }
}

@_cdecl("deviceid_set_interactive")
public func deviceid_set_interactive(_ interactive: Int32, _ timeoutMilliseconds: UInt32) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        guard interactive == 0 || interactive == 1 else {
            throw DeviceIDError(.invalidArgument, "interactive must be 0 or 1, not \(interactive)")
        }
        try reconfigure {
            $0.interactive = interactive == 1
            $0.interactiveTimeoutMilliseconds = timeoutMilliseconds == 0
                ? Configuration.defaultInteractiveTimeoutMilliseconds : timeoutMilliseconds
        }
    }
}

@_cdecl("deviceid_get_interactive")
public func deviceid_get_interactive() -> Int32 {
    do {
        return try DeviceIdentity.shared.configuration().interactive ? 1 : 0
    } catch {
        return cStatus { () throws(DeviceIDError) in throw error }
    }
}
