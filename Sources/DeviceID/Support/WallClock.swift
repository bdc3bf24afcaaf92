import CDeviceIDLibc

/// The one read of the wall clock for record times (`created`, `confirmed`) and setting clocks.
/// It may step back or forward; docs/STATE.md says what each use does then.
enum WallClock {
    /// Seconds since the epoch; 0 before it.
    static func seconds() -> UInt64 {
        UInt64(max(0, time(nil)))
    }

    /// Milliseconds since the epoch; 0 before it.
    static func milliseconds() -> UInt64 {
        var ts = timespec()
        guard clock_gettime(CLOCK_REALTIME, &ts) == 0, ts.tv_sec >= 0 else { return 0 }
        return UInt64(ts.tv_sec) * 1000 + UInt64(ts.tv_nsec / 1_000_000)
    }
}
