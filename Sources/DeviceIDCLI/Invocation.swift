import DeviceID

/// The command line, parsed: global options anywhere before `--`, then a command and its operands.
struct Invocation {
    var json = false
    var backend: Configuration.Backend?
    var protection: Configuration.Protection?
    var timeoutMilliseconds: UInt32?
    var storeDirectory: String?
    var interactive = false
    var interactiveTimeoutMilliseconds: UInt32?
    var uppercase = false
    var compact = false
    var interface: String?
    var bundleID: String?
    var nonce: String?
    var akCertificate: String?
    var clientDataHash: String?
    /// `secret store` may store an empty secret (an empty standard input is refused otherwise).
    var allowEmpty = false
    var words: [String] = []

    struct UsageError: Error {
        let message: Words
    }

    /// Whether `--json` is among the options, for reporting a usage error found before it.
    static func wantsJSON(_ arguments: [String]) -> Bool {
        for argument in arguments {
            if argument == "--" { return false }
            if argument == "--json" { return true }
        }
        return false
    }

    /// The command word, if the arguments name one (for a usage error's hint).
    static func command(_ arguments: [String]) -> String? {
        arguments.first { !$0.hasPrefix("-") }
    }

    init(_ arguments: [String]) throws(UsageError) {
        var iterator = arguments.makeIterator()
        var optionsEnded = false
        while let argument = iterator.next() {
            if !optionsEnded && argument == "-h" {
                words = ["help"] + words.prefix(1)
                return
            }
            if optionsEnded || !argument.hasPrefix("--") || argument == "-" {
                words.append(argument)
                continue
            }
            let (name, inline) = Self.split(argument)
            func value() throws(UsageError) -> String {
                if let inline { return inline }
                guard let next = iterator.next() else { throw UsageError(message: "\(name) needs a value") }
                return next
            }
            switch name {
            case "--": optionsEnded = true
            case "--json": json = true
            case "--help": words = ["help"] + words.prefix(1); return
            case "--version": words = ["version"]; return
            case "--backend":
                let v = try value()
                guard let b = Configuration.Backend(name: v) else {
                    throw UsageError(message: "--backend must be auto, secret-service or file, not '\(v)'")
                }
                backend = b
            case "--protection":
                let v = try value()
                guard let p = Configuration.Protection(name: v) else {
                    throw UsageError(message: "--protection must be one of \(Configuration.Protection.names), not '\(v)'")
                }
                protection = p
            case "--timeout":
                let v = try value()
                timeoutMilliseconds = try Self.accepted(v, "--timeout") { $0.timeoutMilliseconds = UInt32(v) ?? 0 }
            case "--interactive":
                interactive = true
                if let inline {
                    interactiveTimeoutMilliseconds = try Self.accepted(inline, "--interactive=MS") {
                        $0.interactiveTimeoutMilliseconds = UInt32(inline) ?? 0
                    }
                }
            case "--uppercase": uppercase = true
            case "--compact": compact = true
            case "--allow-empty": allowEmpty = true
            case "--interface": interface = try value()
            case "--bundle": bundleID = try value()
            case "--nonce": nonce = try value()
            case "--ak-certificate": akCertificate = try value()
            case "--client-data-hash": clientDataHash = try value()
            case "--store-dir":
                let v = try value()
                _ = try Self.accepted(v, "--store-dir") { $0.storeDirectory = v }
                storeDirectory = v
            default:
                throw UsageError(message: "unknown option '\(name)'")
            }
        }
    }

    /// A value the library's own rules accept (`Configuration.Overrides.validated`), so that the
    /// command line and the API refuse the same values with the same words.
    private static func accepted(_ text: String, _ option: String,
                                 _ set: (inout Configuration.Overrides) -> Void) throws(UsageError) -> UInt32 {
        var overrides = Configuration.Overrides()
        set(&overrides)
        do {
            _ = try overrides.validated()
        } catch {
            throw UsageError(message: "\(option) '\(text)': \(error.detail)")
        }
        return UInt32(text) ?? 0
    }

    private static func split(_ argument: String) -> (String, String?) {
        guard let eq = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<eq]), String(argument[argument.index(after: eq)...]))
    }
}
