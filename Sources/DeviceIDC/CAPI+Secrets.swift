import CDeviceIDAPI
import CDeviceIDLibc
import DeviceID

private func names(_ service: UnsafePointer<CChar>?, _ account: UnsafePointer<CChar>?) throws(DeviceIDError) -> (String, String) {
    (try CArguments.name(service, "service"), try CArguments.name(account, "account"))
}

@c @implementation
public func deviceid_secret_store(
    _ context: OpaquePointer?, _ service: UnsafePointer<CChar>?, _ account: UnsafePointer<CChar>?,
    _ data: UnsafeRawPointer?, _ size: Int
) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        let (s, a) = try names(service, account)
        let count = UInt(bitPattern: size)
        guard count <= UInt(DEVICEID_SECRET_MAX) else {
            throw DeviceIDError(.tooLarge, "\(count) bytes; the limit is \(DEVICEID_SECRET_MAX)")
        }
        guard data != nil || count == 0 else { throw DeviceIDError(.invalidArgument, "data is NULL") }
        var bytes = data.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(count))) } ?? []
        defer { SecretMemory.wipe(&bytes) }
        try Context.instance(context).storeSecret(bytes, service: s, account: a)
    }
}

@c @implementation
public func deviceid_secret_lookup(
    _ context: OpaquePointer?, _ service: UnsafePointer<CChar>?, _ account: UnsafePointer<CChar>?,
    _ data: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ size: UnsafeMutablePointer<Int>?
) -> Int32 {
    data?.pointee = nil
    size?.pointee = 0
    return cStatus { () throws(DeviceIDError) in
        guard let data, let size else { throw DeviceIDError(.invalidArgument, "data or size is NULL") }
        let (s, a) = try names(service, account)
        guard var secret = try Context.instance(context).lookupSecret(service: s, account: a) else {
            throw DeviceIDError(.notFound, "no secret for this service and account")
        }
        defer { SecretMemory.wipe(&secret) }
        guard let copy = Allocation.copy(secret) else { throw DeviceIDError(.noMemory) }
        data.pointee = copy
        size.pointee = secret.count
    }
}

@c @implementation
public func deviceid_secret_delete(_ context: OpaquePointer?, _ service: UnsafePointer<CChar>?,
                                   _ account: UnsafePointer<CChar>?) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        let (s, a) = try names(service, account)
        guard try Context.instance(context).deleteSecret(service: s, account: a) else {
            throw DeviceIDError(.notFound, "no secret for this service and account")
        }
    }
}
