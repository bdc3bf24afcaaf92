import CDeviceIDLibc

/// Runs an action on its own thread if `finish()` is not called within a deadline.
///
/// libsecret's own D-Bus timeouts are 25–50 s and a frozen daemon costs all of that; cancelling
/// the call's GCancellable from another thread ends it at once. One short-lived thread per
/// keyring session costs tens of microseconds against milliseconds of D-Bus round trips.
final class Watchdog: @unchecked Sendable {
    // State shared with the watchdog thread, guarded by `mutex`.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var finished = false
    private(set) var fired = false
    private let deadline: timespec
    private let action: () -> Void
    private var thread: Threads.Joinable?

    /// False when no thread could be started; the caller must not proceed unbounded.
    var isArmed: Bool { thread != nil }

    init(milliseconds: UInt32, action: @escaping () -> Void) {
        self.action = action
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let total = Int(now.tv_nsec) + Int(milliseconds % 1000) * 1_000_000
        deadline = timespec(tv_sec: now.tv_sec + Int(milliseconds / 1000) + total / 1_000_000_000,
                            tv_nsec: total % 1_000_000_000)
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
        // The thread holds the watchdog until it ends; `finish()` joins it.
        thread = Threads.start { [self] in wait() }
    }

    private func wait() {
        pthread_mutex_lock(mutex)
        while !finished {
            var deadline = self.deadline
            if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT && !finished {
                fired = true
                pthread_mutex_unlock(mutex)
                action()
                return
            }
        }
        pthread_mutex_unlock(mutex)
    }

    /// Stops the watchdog; after it returns the action has either run completely or never will.
    func finish() {
        pthread_mutex_lock(mutex)
        finished = true
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
        thread?.join()
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }
}
