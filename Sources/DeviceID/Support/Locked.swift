/// A value behind a `PThreadMutex`: what `Synchronization.Mutex` gives, in both builds (Embedded
/// Swift has no `Mutex` on Linux).
package final class Locked<Value>: @unchecked Sendable {
    private let mutex = PThreadMutex()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    package func withLock<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        try mutex.withLock { () throws(E) -> T in try body(&value) }
    }
}
