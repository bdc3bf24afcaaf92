import CDeviceIDFastPaths
import DeviceID

@_cdecl("deviceid_get")
public func deviceid_get(_ appID: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<CChar>?, _ outSize: UInt) -> Int32 {
    deviceid_identifier(Scope.app.rawValue, appID, out, outSize, nil, nil)
}

@_cdecl("deviceid_get_ex")
public func deviceid_get_ex(
    _ appID: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<CChar>?, _ outSize: UInt,
    _ source: UnsafeMutablePointer<Int32>?, _ flags: UnsafeMutablePointer<UInt32>?
) -> Int32 {
    deviceid_identifier(Scope.app.rawValue, appID, out, outSize, source, flags)
}

@_cdecl("deviceid_reset")
public func deviceid_reset(_ appID: UnsafePointer<CChar>?) -> Int32 {
    deviceid_identifier_reset(Scope.app.rawValue, appID)
}

@_cdecl("deviceid_identifier")
public func deviceid_identifier(
    _ scope: Int32, _ name: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<CChar>?, _ outSize: UInt,
    _ source: UnsafeMutablePointer<Int32>?, _ flags: UnsafeMutablePointer<UInt32>?
) -> Int32 {
    deviceid_context_identifier(nil, scope, name, out, outSize, source, flags)
}

@_cdecl("deviceid_context_identifier")
public func deviceid_context_identifier(
    _ context: OpaquePointer?, _ scope: Int32, _ name: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<CChar>?,
    _ outSize: UInt, _ source: UnsafeMutablePointer<Int32>?, _ flags: UnsafeMutablePointer<UInt32>?
) -> Int32 {
    // Answers already given come from this thread's cache: a few nanoseconds, no allocation.
    // The cache holds the process-wide instance's answers only; a context answers from its own memory.
    let shared = context == nil
    let kind = Scope(rawValue: scope).map { AnswerCache.Kind.identifier($0) }
    if shared, let kind, AnswerCache.lookup(kind, name, into: out, size: outSize, source: source, flags: flags) {
        dids_set_last_error(nil)
        return 0
    }
    let instance = Context.instance(context)
    let generation = AnswerCache.generation()
    var keyringFailure: DeviceIDError?
    let status = cStatus { () throws(DeviceIDError) in
        guard let scope = Scope(rawValue: scope) else { throw DeviceIDError(.invalidArgument, "unknown scope \(scope)") }
        let what = scope == .vendor ? "vendor id" : "app id"
        let text = scope == .advertising ? nil : try CArguments.name(name, what)
        try CArguments.checkUUIDBuffer(out, outSize)
        do throws(DeviceIDError) {
            let answer = try instance.identifier(scope: scope, name: text)
            try CArguments.copy(answer.uuidString, to: out, size: outSize)
            keyringFailure = answer.keyringFailure
            source?.pointee = answer.source.rawValue
            flags?.pointee = answer.flags.rawValue
            if shared, answer.isSettled {
                AnswerCache.store(.identifier(scope), name, generation: generation, answer: out,
                                  source: answer.source.rawValue, flags: answer.flags.rawValue)
            }
        } catch where error.code == .optedOut {
            try CArguments.copy(ID128.null.uuidString, to: out, size: outSize)
            throw error
        }
    }
    // DEVICEID_FLAG_FILE_ONLY's reason, for deviceid_last_error().
    if status == 0, let keyringFailure { dids_set_last_error("kept only in the file store: \(keyringFailure)") }
    return status
}

@_cdecl("deviceid_identifier_reset")
public func deviceid_identifier_reset(_ scope: Int32, _ name: UnsafePointer<CChar>?) -> Int32 {
    deviceid_context_identifier_reset(nil, scope, name)
}

@_cdecl("deviceid_context_identifier_reset")
public func deviceid_context_identifier_reset(_ context: OpaquePointer?, _ scope: Int32,
                                              _ name: UnsafePointer<CChar>?) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        guard let scope = Scope(rawValue: scope) else { throw DeviceIDError(.invalidArgument, "unknown scope \(scope)") }
        let what = scope == .vendor ? "vendor id" : "app id"
        let text = scope == .advertising || scope == .openUDID ? nil : try CArguments.name(name, what)
        try Context.instance(context).resetIdentifier(scope: scope, name: text)
    }
}
