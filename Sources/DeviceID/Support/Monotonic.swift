import CDeviceIDLibc

/// CLOCK_MONOTONIC in milliseconds: the clock of every deadline.
enum Monotonic {
    static func milliseconds() -> Int {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return t.tv_sec * 1000 + t.tv_nsec / 1_000_000
    }
}
