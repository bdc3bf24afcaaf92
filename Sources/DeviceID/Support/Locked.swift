/// A value behind a `PThreadMutex`: what `Synchronization.Mutex` gives, in both builds (Embedded
/// Swift has no `Mutex` on Linux).
final class Locked<Value>: @unchecked Sendable {
    private let mutex = PThreadMutex()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        try mutex.withLock { () throws(E) -> T in try body(&value) }
    }
}
