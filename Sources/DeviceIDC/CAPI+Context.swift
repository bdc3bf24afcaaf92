import CDeviceIDAPI
import DeviceID

/// `deviceid_context`: a `DeviceIdentity` of the caller's own, with its own backend, store
/// directory, deadline and interactive mode. The pointer C holds is a retained `DeviceIdentity`;
/// a NULL context names the process-wide instance, which every stateful call takes first.
enum Context {
    static func instance(_ context: OpaquePointer?) -> DeviceIdentity {
        guard let context else { return DeviceIdentity.shared }
        return Unmanaged<DeviceIdentity>.fromOpaque(UnsafeRawPointer(context)).takeUnretainedValue()
    }
}

@c @implementation
public func deviceid_context_new(_ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        guard let out else { throw DeviceIDError(.invalidArgument, "out is NULL") }
        out.pointee = OpaquePointer(Unmanaged.passRetained(DeviceIdentity()).toOpaque())
    }
}

@c @implementation
public func deviceid_context_free(_ context: OpaquePointer?) {
    guard let context else { return }
    Unmanaged<DeviceIdentity>.fromOpaque(UnsafeRawPointer(context)).release()
}
