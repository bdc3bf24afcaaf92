import CDeviceIDLibc

/// The one read of the wall clock for record times (`created`, `confirmed`) and setting clocks.
/// It may step back or forward; docs/STATE.md says what each use does then.
enum WallClock {
    /// Seconds since the epoch; 0 before it. Read from CLOCK_REALTIME, as `milliseconds` and
    /// Foundation's `Date` are: glibc's `time()` reads the tick-updated coarse clock, which can
    /// still show the previous second for a few milliseconds after `Date` has moved on.
    static func seconds() -> UInt64 {
        milliseconds() / 1000
    }

    /// Milliseconds since the epoch; 0 before it.
    static func milliseconds() -> UInt64 {
        var ts = timespec()
        guard clock_gettime(CLOCK_REALTIME, &ts) == 0, ts.tv_sec >= 0 else { return 0 }
        return UInt64(ts.tv_sec) * 1000 + UInt64(ts.tv_nsec / 1_000_000)
    }

    /// `seconds` since the epoch as "YYYY-MM-DD hh:mm:ss UTC", for words shown to people
    /// (civil-from-days, after Howard Hinnant's date algorithms; no locale, no time zone file).
    static func utcText(_ seconds: Int64) -> String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let second = seconds - days * 86_400
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(year)-\(two(month))-\(two(day)) \(two(second / 3600)):\(two(second / 60 % 60)):\(two(second % 60)) UTC"
    }
}
