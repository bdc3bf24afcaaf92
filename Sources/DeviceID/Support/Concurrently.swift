import Glibc

/// Runs two pieces of work at once: `side` on a short-lived thread, `main` on this one.
///
/// The first lookup of an ID waits milliseconds on D-Bus round trips to the keyring; reading the
/// file mirror (and the first use of OpenSSL, ≈ 0.8 ms of provider loading here) fits inside
/// that wait. If no thread can be started, both run here, one after the other.
enum Concurrently {
    fileprivate final class Job<B>: @unchecked Sendable {
        let work: () -> B
        var result: B?
        init(_ work: @escaping () -> B) { self.work = work }
    }

    static func run<A, B>(_ main: () -> A, side: @escaping () -> B) -> (A, B) {
        let job = Job(side)
        var thread = pthread_t()
        let context = Unmanaged.passRetained(job).toOpaque()
        let started = pthread_create(&thread, nil, { raw in
            let job = Unmanaged<AnyObject>.fromOpaque(raw!).takeUnretainedValue()
            (job as! Runnable).runOnce()
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

private protocol Runnable: AnyObject {
    func runOnce()
}

extension Concurrently.Job: Runnable {
    func runOnce() { result = work() }
}
