import CDeviceIDFastPaths
import DeviceID

/// The C ABI's per-thread cache of recent answers (fast_cache.c): which answers are kept, under
/// which kind, and how they are looked up and stored — all here. An answer is kept with
/// `DeviceIdentity.shared.generation` as it was before the answer was computed, so a reset or a
/// reconfiguration on any thread makes every thread's copy stale.
enum AnswerCache {
    /// What an answer is: a per-app or per-vendor identifier (the other scopes depend on settings
    /// and are never cached), or an app-specific machine ID in one of its four formats.
    enum Kind {
        case identifier(Scope)
        case appSpecific(format: UInt32)

        /// Identifiers use their Scope's raw value (1...4); app-specific IDs 16 + format (16...19).
        var number: Int32? {
            switch self {
            case .identifier(let scope): scope == .app || scope == .vendor ? scope.rawValue : nil
            case .appSpecific(let format): format <= 3 ? 16 + Int32(format) : nil
            }
        }
    }

    /// The generation an answer computed from now on belongs to.
    static func generation() -> UInt64 { DeviceIdentity.shared.generation }

    /// Copies a cached answer into `out`; true on a hit.
    static func lookup(_ kind: Kind, _ name: UnsafePointer<CChar>?, into out: UnsafeMutablePointer<CChar>?,
                       size: UInt, source: UnsafeMutablePointer<Int32>? = nil,
                       flags: UnsafeMutablePointer<UInt32>? = nil) -> Bool {
        guard let number = kind.number else { return false }
        // The cache only needs to know the buffer holds an answer; clamping keeps a huge size
        // from trapping in the conversion.
        return dids_cache_lookup(number, name, generation(), out, Int(clamping: size), source, flags) == 1
    }

    /// Remembers `answer` (text already in `out`), computed at `generation`.
    static func store(_ kind: Kind, _ name: UnsafePointer<CChar>?, generation: UInt64,
                      answer: UnsafePointer<CChar>?, source: Int32 = 0, flags: UInt32 = 0) {
        guard let number = kind.number, let name, let answer else { return }
        dids_cache_store(number, name, generation, answer, source, flags)
    }
}
