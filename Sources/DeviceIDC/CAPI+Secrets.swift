import CDeviceIDLibc
import DeviceID

@_cdecl("deviceid_secret_store")
public func deviceid_secret_store(
    _ service: UnsafePointer<CChar>?, _ account: UnsafePointer<CChar>?,
    _ data: UnsafeRawPointer?, _ size: UInt
) -> Int32 {
    deviceid_context_secret_store(nil, service, account, data, size)
}

@_cdecl("deviceid_context_secret_store")
public func deviceid_context_secret_store(
    _ context: OpaquePointer?, _ service: UnsafePointer<CChar>?, _ account: UnsafePointer<CChar>?,
    _ data: UnsafeRawPointer?, _ size: UInt
) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        let s = try CArguments.name(service, "service")
        let a = try CArguments.name(account, "account")
        guard size <= UInt(DeviceIdentity.maximumSecretSize) else {
            throw DeviceIDError(.tooLarge, "\(size) bytes; the limit is \(DeviceIdentity.maximumSecretSize)")
        }
        guard data != nil || size == 0 else { throw DeviceIDError(.invalidArgument, "data is NULL") }
        var bytes = data.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(size))) } ?? []
        defer { SecretMemory.wipe(&bytes) }
        try Context.instance(context).storeSecret(bytes, service: s, account: a)
    }
}

@_cdecl("deviceid_secret_lookup")
public func deviceid_secret_lookup(
    _ service: UnsafePointer<CChar>?, _ account: UnsafePointer<CChar>?,
    _ data: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ size: UnsafeMutablePointer<UInt>?
) -> Int32 {
    deviceid_context_secret_lookup(nil, service, account, data, size)
}

@_cdecl("deviceid_context_secret_lookup")
public func deviceid_context_secret_lookup(
    _ context: OpaquePointer?, _ service: UnsafePointer<CChar>?, _ account: UnsafePointer<CChar>?,
    _ data: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ size: UnsafeMutablePointer<UInt>?
) -> Int32 {
    data?.pointee = nil
    size?.pointee = 0
    return cStatus { () throws(DeviceIDError) in
        guard let data, let size else { throw DeviceIDError(.invalidArgument, "data or size is NULL") }
        let s = try CArguments.name(service, "service")
        let a = try CArguments.name(account, "account")
        guard var secret = try Context.instance(context).lookupSecret(service: s, account: a) else {
            throw DeviceIDError(.notFound, "no secret for this service and account")
        }
        defer { SecretMemory.wipe(&secret) }
        guard let copy = Allocation.copy(secret) else { throw DeviceIDError(.noMemory) }
        data.pointee = copy
        size.pointee = UInt(secret.count)
    }
}

@_cdecl("deviceid_secret_delete")
public func deviceid_secret_delete(_ service: UnsafePointer<CChar>?, _ account: UnsafePointer<CChar>?) -> Int32 {
    deviceid_context_secret_delete(nil, service, account)
}

@_cdecl("deviceid_context_secret_delete")
public func deviceid_context_secret_delete(_ context: OpaquePointer?, _ service: UnsafePointer<CChar>?,
                                           _ account: UnsafePointer<CChar>?) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        let s = try CArguments.name(service, "service")
        let a = try CArguments.name(account, "account")
        guard try Context.instance(context).deleteSecret(service: s, account: a) else {
            throw DeviceIDError(.notFound, "no secret for this service and account")
        }
    }
}
