import CDeviceIDLibc

/// A plain pthread mutex that works with typed throws. Used where a lock is held across C calls.
///
/// A child forked while another thread held the lock would inherit it held by a thread that does
/// not exist there: an owner of such a lock calls `reinitializeInChild()` from a `pthread_atfork`
/// child handler (see `ForkedChild`), the usual remedy, so that the child starts with it free.
final class PThreadMutex: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init() { pthread_mutex_init(mutex, nil) }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Only in a forked child, where no other thread exists yet.
    func reinitializeInChild() {
        pthread_mutex_init(mutex, nil)
    }
}
