import CDeviceIDAPI
import DeviceID

/// `deviceid_context`: a `DeviceIdentity` of the caller's own, with its own backend, store
/// directory, deadline and interactive mode. A NULL context names the process-wide instance,
/// which every stateful call takes first.
///
/// The pointer C holds is a handle, never dereferenced: a number this process gives out once,
/// looked up among the live contexts. So a freed, doubly freed or made-up pointer is an
/// `INVALID_ARGUMENT` and never a crash, a freed context's handle never names a later one, and a
/// caller built for 0.3 (whose first argument was an app id or a backend number) that reaches
/// these functions by mistake is refused rather than read as a context.
enum Context {
    /// The live contexts by handle; removing one releases it once no call holds it any more.
    private static let live = Locked<(next: UInt, contexts: [UInt: DeviceIdentity])>((next: 1, contexts: [:]))
    /// The low bits every handle carries: no small number, as a 0.3 caller's backend or flag was,
    /// and no address (those are aligned) names a context.
    private static let tag: UInt = 0xD1D5

    /// Makes the list now (a lazy global, `settleBeforeFork`).
    static func settle() { _ = live }

    static func instance(_ context: OpaquePointer?) throws(DeviceIDError) -> DeviceIdentity {
        guard let context else { return DeviceIdentity.shared }
        let handle = UInt(bitPattern: context)
        guard let found = live.withLock({ $0.contexts[handle] }) else {
            throw DeviceIDError(.invalidArgument, "ctx is not a context of this process: never made by "
                + "deviceid_context_new, or already given to deviceid_context_free")
        }
        return found
    }

    static func make() throws(DeviceIDError) -> OpaquePointer {
        let identity = DeviceIdentity()
        let handle = try live.withLock { (state) throws(DeviceIDError) -> UInt in
            // Never reused: past the last number a handle can carry, no more contexts.
            guard state.next <= UInt.max >> 16 else {
                throw DeviceIDError(.noMemory, "this process has made all the contexts it can (\(state.next - 1))")
            }
            let handle = state.next << 16 | tag
            state.next += 1
            state.contexts[handle] = identity
            return handle
        }
        return OpaquePointer(bitPattern: handle)!
    }

    static func release(_ context: OpaquePointer) {
        let handle = UInt(bitPattern: context)
        // Its last reference goes when this returns, outside the lock, unless a call still holds it.
        _ = live.withLock { $0.contexts.removeValue(forKey: handle) }
    }
}

@c @implementation
public func deviceid_context_new(_ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        guard let out else { throw DeviceIDError(.invalidArgument, "out is NULL") }
        out.pointee = try Context.make()
    }
}

@c @implementation
public func deviceid_context_free(_ context: OpaquePointer?) {
    guard let context else { return }
    Context.release(context)
}
