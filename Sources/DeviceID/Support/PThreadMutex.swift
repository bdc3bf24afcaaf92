import CDeviceIDLibc
import CDeviceIDSystem

/// A plain pthread mutex that works with typed throws. Used where a lock is held across C calls.
///
/// A child forked while another thread held the lock would inherit it held by a thread that does
/// not exist there. Every one of these is in the list of fork_safe_mutex.c, whose one
/// `pthread_atfork` child handler makes them all free again in every child: a `Locked` cache, a
/// store's lock and a transport's lock alike, with nothing for their owners to remember.
final class PThreadMutex: @unchecked Sendable {
    // Allocation failure traps here as any Swift allocation does (as the pointer this replaced did).
    private let mutex: OpaquePointer = dids_mutex_create()!

    init() {}

    deinit { dids_mutex_destroy(mutex) }

    func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        dids_mutex_lock(mutex)
        defer { dids_mutex_unlock(mutex) }
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
        guard dids_mutex_lock_until(mutex, &wake) == 0 else {
            throw DeviceIDError(.timedOut, "\(purpose) was still busy at the deadline (another thread's call holds it)")
        }
        defer { dids_mutex_unlock(mutex) }
        return try body()
    }
}
