import CDeviceIDAPI
import CDeviceIDFastPaths
import DeviceID

// The version, status texts, the last error and deviceid_free: facts that never change and
// per-thread state, answered without allocation.

@c @implementation
public func deviceid_version() -> UnsafePointer<CChar> { StaticText.pointer(Version.string) }

@c @implementation
public func deviceid_strerror(_ status: Int32) -> UnsafePointer<CChar> {
    StaticText.pointer(StaticText.summary(status))
}

@c @implementation
public func deviceid_status_name(_ status: Int32) -> UnsafePointer<CChar> {
    StaticText.pointer(StaticText.name(status))
}

@c @implementation
public func deviceid_last_error() -> UnsafePointer<CChar> { dids_last_error() }

@c @implementation
public func deviceid_free(_ pointer: UnsafeMutableRawPointer?) { Allocation.free(pointer) }
