import DeviceID

/// The command line, parsed: global options anywhere before `--`, then a command and its operands.
struct Invocation {
    var json = false
    var backend: Configuration.Backend?
    var timeoutMilliseconds: UInt32?
    var storeDirectory: String?
    var interactive = false
    var interactiveTimeoutMilliseconds: UInt32?
    var uppercase = false
    var compact = false
    var interface: String?
    var bundleID: String?
    var words: [String] = []

    struct UsageError: Error {
        let message: String
    }

    init(_ arguments: [String]) throws(UsageError) {
        var iterator = arguments.makeIterator()
        var optionsEnded = false
        while let argument = iterator.next() {
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
            case "--help": words = ["help"]; return
            case "--version": words = ["version"]; return
            case "--backend":
                let v = try value()
                guard let b = Configuration.Backend(name: v) else {
                    throw UsageError(message: "--backend must be auto, secret-service or file, not '\(v)'")
                }
                backend = b
            case "--timeout":
                let v = try value()
                guard let ms = UInt32(v), ms > 0, ms <= Configuration.maximumTimeoutMilliseconds else {
                    throw UsageError(message: "--timeout takes milliseconds from 1 to \(Configuration.maximumTimeoutMilliseconds), not '\(v)'")
                }
                timeoutMilliseconds = ms
            case "--interactive":
                interactive = true
                if let inline {
                    guard let ms = UInt32(inline), ms > 0, ms <= Configuration.maximumTimeoutMilliseconds else {
                        throw UsageError(message: "--interactive=MS takes milliseconds from 1 to \(Configuration.maximumTimeoutMilliseconds), not '\(inline)'")
                    }
                    interactiveTimeoutMilliseconds = ms
                }
            case "--uppercase": uppercase = true
            case "--compact": compact = true
            case "--interface": interface = try value()
            case "--bundle": bundleID = try value()
            case "--store-dir":
                let v = try value()
                guard v.hasPrefix("/") else { throw UsageError(message: "--store-dir must be an absolute path") }
                storeDirectory = v
            default:
                throw UsageError(message: "unknown option '\(name)'")
            }
        }
    }

    private static func split(_ argument: String) -> (String, String?) {
        guard let eq = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<eq]), String(argument[argument.index(after: eq)...]))
    }
}
