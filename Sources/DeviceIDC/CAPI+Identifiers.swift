import CDeviceIDAPI
import CDeviceIDFastPaths
import DeviceID

// The identifiers of every scope (include/deviceid.h, "The stable identifier" and "Identifiers
// per app, per vendor, ..."), and the two one-call conveniences over them.

/// The name a scope takes, read from the caller: none for the advertising ID (and for an
/// OpenUDID reset, which resets it for every app).
private func scopedName(_ scope: Scope, _ name: UnsafePointer<CChar>?, reset: Bool = false) throws(DeviceIDError) -> String? {
    if scope == .advertising || (reset && scope == .openUDID) { return nil }
    return try CArguments.name(name, scope == .vendor ? "vendor id" : "app id")
}

private func scope(_ value: Int32) throws(DeviceIDError) -> Scope {
    guard let scope = Scope(rawValue: value) else { throw DeviceIDError(.invalidArgument, "unknown scope \(value)") }
    return scope
}

/// deviceid_identifier() and deviceid_get(): one implementation.
private func identifier(
    _ context: OpaquePointer?, _ scopeValue: Int32, _ name: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<CChar>?,
    _ outSize: UInt, _ source: UnsafeMutablePointer<Int32>?, _ flags: UnsafeMutablePointer<UInt32>?
) -> Int32 {
    // Answers already given come from this thread's cache: a few nanoseconds, no allocation.
    // The cache holds the process-wide instance's answers only; a context answers from its own memory.
    let shared = context == nil
    let kind = Scope(rawValue: scopeValue).map { AnswerCache.Kind.identifier($0) }
    if shared, let kind, AnswerCache.lookup(kind, name, into: out, size: outSize, source: source, flags: flags) {
        dids_set_last_error(nil)
        return 0
    }
    let generation = AnswerCache.generation()
    var keyringFailure: DeviceIDError?
    let status = cStatus { () throws(DeviceIDError) in
        let instance = try Context.instance(context)
        let scope = try scope(scopeValue)
        let text = try scopedName(scope, name)
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

private func reset(_ context: OpaquePointer?, _ scopeValue: Int32, _ name: UnsafePointer<CChar>?) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        let scope = try scope(scopeValue)
        try Context.instance(context).resetIdentifier(scope: scope, name: try scopedName(scope, name, reset: true))
    }
}

@c @implementation
public func deviceid_get(_ appID: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<CChar>?, _ outSize: Int) -> Int32 {
    identifier(nil, Scope.app.rawValue, appID, out, UInt(bitPattern: outSize), nil, nil)
}

@c @implementation
public func deviceid_reset(_ appID: UnsafePointer<CChar>?) -> Int32 {
    reset(nil, Scope.app.rawValue, appID)
}

@c @implementation
public func deviceid_identifier(
    _ context: OpaquePointer?, _ scope: Int32, _ name: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<CChar>?,
    _ outSize: Int, _ source: UnsafeMutablePointer<Int32>?, _ flags: UnsafeMutablePointer<UInt32>?
) -> Int32 {
    identifier(context, scope, name, out, UInt(bitPattern: outSize), source, flags)
}

@c @implementation
public func deviceid_identifier_reset(_ context: OpaquePointer?, _ scope: Int32, _ name: UnsafePointer<CChar>?) -> Int32 {
    reset(context, scope, name)
}

@c @implementation
public func deviceid_identifier_location(_ context: OpaquePointer?, _ scopeValue: Int32,
                                         _ name: UnsafePointer<CChar>?) -> Int32 {
    var location: Int32 = 0
    let status = cStatus { () throws(DeviceIDError) in
        let scope = try scope(scopeValue)
        location = try Context.instance(context).identifier(scope: scope, name: try scopedName(scope, name)).location.rawValue
    }
    return status < 0 ? status : location
}

@c @implementation
public func deviceid_source_name(_ source: Int32) -> UnsafePointer<CChar> {
    StaticText.pointer(StableID.Source(rawValue: source)?.staticName ?? "unknown")
}
