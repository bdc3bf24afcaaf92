import CDeviceIDLibc

/// Runs two pieces of work at once: `side` on a short-lived thread, `main` on this one.
///
/// The first lookup of an ID waits milliseconds on D-Bus round trips to the keyring; reading the
/// file mirror (and the first use of OpenSSL, ≈ 0.8 ms of provider loading here) fits inside
/// that wait. If no thread can be started, both run here, one after the other.
enum Concurrently {
    /// What the side thread runs, without knowing the result type (Embedded Swift has no casts
    /// to protocols, so a base class carries the entry point).
    fileprivate class Runnable {
        func runOnce() {}
    }

    fileprivate final class Job<B>: Runnable, @unchecked Sendable {
        let work: () -> B
        var result: B?
        init(_ work: @escaping () -> B) { self.work = work }
        override func runOnce() { result = work() }
    }

    static func run<A, B>(_ main: () -> A, side: @escaping () -> B) -> (A, B) {
        let job = Job(side)
        var thread = pthread_t()
        let context = Unmanaged.passRetained(job).toOpaque()
        let started = pthread_create(&thread, nil, { raw in
            Unmanaged<Runnable>.fromOpaque(raw!).takeUnretainedValue().runOnce()
            return nil
        }, context) == 0
        guard started else {
            Unmanaged<Job<B>>.fromOpaque(context).release()
            return (main(), side())
        }
        let a = main()
        pthread_join(thread, nil)
        Unmanaged<Job<B>>.fromOpaque(context).release()
        return (a, job.result!)
    }
}
