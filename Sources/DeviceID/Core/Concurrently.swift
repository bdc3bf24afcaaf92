import CDeviceIDLibc

/// Runs two pieces of work at once: `side` on a short-lived thread, `main` on this one.
///
/// The first lookup of an ID waits milliseconds on D-Bus round trips to the keyring; reading the
/// file mirror (and the first use of OpenSSL, ≈ 0.8 ms of provider loading here) fits inside
/// that wait. If no thread can be started, both run here, one after the other.
enum Concurrently {
    /// The side work's result, written by the side thread before it ends and read after the join.
    private final class Slot<B>: @unchecked Sendable {
        var value: B?
    }

    static func run<A, B>(_ main: () -> A, side: @escaping () -> B) -> (A, B) {
        let slot = Slot<B>()
        guard let thread = Threads.start({ slot.value = side() }) else { return (main(), side()) }
        let a = main()
        thread.join()
        return (a, slot.value!)
    }
}
