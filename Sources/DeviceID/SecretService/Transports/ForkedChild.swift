import CDeviceIDLibc

/// What a process forked from one that used DeviceID must not inherit: locks held by threads that
/// do not exist in the child, and connections served by such threads. Each owner registers a
/// handler that `pthread_atfork` runs in every child, before the child's code goes on.
enum ForkedChild {
    /// Registers `handler` for every later fork. Call once per owner (from a `static let`).
    static func onFork(_ handler: @convention(c) () -> Void) {
        pthread_atfork(nil, nil, handler)
    }
}
