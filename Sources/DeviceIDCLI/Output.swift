import DeviceID
import CDeviceIDLibc

/// Exit codes (README "Command line"): 0 success, 1 not found, 2 usage, 10 + |status| for every
/// other DeviceID status (LOCKED 14, UNAVAILABLE 15, TIMED_OUT 16, CORRUPT 17, …).
enum ExitCode {
    static let success: Int32 = 0
    static let notFound: Int32 = 1
    static let usage: Int32 = 2

    static func of(_ error: DeviceIDError) -> Int32 {
        error.code == .notFound ? notFound : 10 - error.code.rawValue
    }
}

/// Writing results and errors, as text or as JSON.
struct Output {
    let json: Bool

    func write(_ text: Words, to fd: Int32 = STDOUT_FILENO) {
        Self.write(Array(text.text.utf8), to: fd)
    }

    @_disfavoredOverload
    func write<Text: StringProtocol>(_ text: Text, to fd: Int32 = STDOUT_FILENO) {
        Self.write(Array(text.utf8), to: fd)
    }

    /// Every byte to a descriptor (stdio's FILE globals are not concurrency-safe in Swift 6).
    static func write(_ bytes: [UInt8], to fd: Int32) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { CDeviceIDLibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return }
            offset += n
        }
    }

    /// A JSON object from ordered pairs; values are already JSON.
    static func object(_ pairs: [(String, String)]) -> String {
        "{" + pairs.map { "\(quote($0.0)):\($0.1)" }.joined(separator: ",") + "}"
    }

    static func quote(_ text: String) -> String { JSONString.quoted(text) }

    /// A usage error: one line and where to read more, on stderr (an object under --json).
    func usageError(_ message: Words, hint: String) -> Int32 {
        if json {
            write(Self.object([("error", Self.object([
                ("name", Self.quote("USAGE")), ("message", Self.quote(message.text)), ("help", Self.quote(hint)),
            ]))]) + "\n", to: STDERR_FILENO)
        } else {
            write("deviceid: \(message)\nTry '\(hint)'.\n", to: STDERR_FILENO)
        }
        return ExitCode.usage
    }

    /// What a command that prints nothing in text says under --json.
    func done(_ pairs: [(String, String)]) {
        if json { write(Self.object(pairs) + "\n") }
    }

    /// Reports a failure on stderr and returns the exit code.
    func fail(_ error: DeviceIDError) -> Int32 {
        if json {
            write(Self.object([("error", Self.object([
                ("status", String(error.code.rawValue)), ("name", Self.quote(error.code.name)),
                ("message", Self.quote(error.description)),
            ]))]) + "\n", to: STDERR_FILENO)
        } else {
            write("deviceid: \(error.description)\n", to: STDERR_FILENO)
        }
        return ExitCode.of(error)
    }
}
