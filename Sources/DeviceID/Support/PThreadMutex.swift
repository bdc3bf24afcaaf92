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

    /// As `withLock`, waiting for the lock until the monotonic clock reaches `end` (milliseconds,
    /// `Monotonic`) at the latest; then `.timedOut` with `purpose` in its words.
    func withLock<T>(until end: Int, _ purpose: String,
                     _ body: () throws(DeviceIDError) -> T) throws(DeviceIDError) -> T {
        // pthread_mutex_timedlock waits on CLOCK_REALTIME: the remaining monotonic time, from now.
        let left = max(end - Monotonic.milliseconds(), 0)
        var wake = timespec()
        clock_gettime(CLOCK_REALTIME, &wake)
        let nanoseconds = wake.tv_nsec + (left % 1000) * 1_000_000
        wake.tv_sec += left / 1000 + nanoseconds / 1_000_000_000
        wake.tv_nsec = nanoseconds % 1_000_000_000
        guard pthread_mutex_timedlock(mutex, &wake) == 0 else {
            throw DeviceIDError(.timedOut, "\(purpose) was still busy at the deadline (another thread's call holds it)")
        }
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Only in a forked child, where no other thread exists yet.
    func reinitializeInChild() {
        pthread_mutex_init(mutex, nil)
    }
}
