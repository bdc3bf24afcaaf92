import CDeviceIDLibc

/// The one place DeviceID starts threads (the deadline watchdog, the side work of a first lookup,
/// the async forms of `nonblocking`, the headroom probe).
///
/// A library must not take a thread for granted: `ulimit -u`, a container's `pids.max` or a
/// shortage of address space make `pthread_create` fail with EAGAIN, and every caller here has
/// a way to go on without one (or fails the call with words).
enum Threads {
    /// What a thread runs (a class, so one pointer carries it through pthread_create).
    private final class Body: @unchecked Sendable {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }

    /// A started thread that must be joined.
    struct Joinable {
        fileprivate let thread: pthread_t
        /// Waits for the thread to end (once).
        func join() { pthread_join(thread, nil) }
    }

    /// Starts `body` on a new thread to be joined; nil when no thread can be started now (errno says why).
    static func start(_ body: @escaping () -> Void) -> Joinable? {
        guard let thread = create(body, detached: false) else { return nil }
        return Joinable(thread: thread)
    }

    /// Starts `body` on a new detached thread; false when no thread can be started now.
    static func detach(_ body: @escaping () -> Void) -> Bool {
        create(body, detached: true) != nil
    }

    private static func create(_ body: @escaping () -> Void, detached: Bool) -> pthread_t? {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        if detached { pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED)) }
        var thread = pthread_t()
        let result = pthread_create(&thread, &attributes, { raw in
            Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        }, context)
        guard result == 0 else {
            Unmanaged<Body>.fromOpaque(context).release()
            errno = result
            return nil
        }
        return thread
    }
}
