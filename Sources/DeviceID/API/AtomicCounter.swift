import CDeviceIDSystem

/// A counter read without a lock (`Synchronization.Atomic`, which Embedded Swift on Linux lacks,
/// in C). Increments happen under their owner's lock; loads may happen anywhere.
final class AtomicCounter: @unchecked Sendable {
    private let cell = UnsafeMutablePointer<UInt64>.allocate(capacity: 1)

    init(_ value: UInt64) { cell.initialize(to: value) }

    deinit { cell.deallocate() }

    func load() -> UInt64 { dids_counter_load(cell) }

    func increment() { dids_counter_increment(cell) }
}
