/// Every failure DeviceID reports, in Swift, C and Python alike.
///
/// `code` maps 1:1 to the negative `DEVICEID_E_*` statuses of `include/deviceid.h` and to the
/// exception classes of the Python package; `detail` says what happened in words, for people.
/// Neither ever contains secret material.
public struct DeviceIDError: Error, Sendable, Hashable, CustomStringConvertible {
    public let code: Code
    public let detail: String

    /// Set only on the keyring path's positive "there is no Secret Service in this context" (no
    /// session bus, or none on it): what lets `auto` keep IDs in the file store alone. Every other
    /// failure, a transport library that cannot be loaded included, leaves open that a keyring
    /// holds the ID (docs/STATE.md, "How each store answers").
    let keyringAbsent: Bool

    /// What the failure is about, which chooses the words its description starts with: "store
    /// unavailable" is right for a store and wrong for a TPM.
    enum Subject: Hashable, Sendable { case stores, tpm }
    let subject: Subject

    public init(_ code: Code, _ detail: String = "") {
        self.code = code
        self.detail = detail
        keyringAbsent = false
        subject = .stores
    }

    /// The same failure, about `subject`.
    func about(_ subject: Subject) -> DeviceIDError {
        DeviceIDError(code: code, detail: detail, keyringAbsent: keyringAbsent, subject: subject)
    }

    /// `.unavailable`, saying that no Secret Service is there in this context.
    static func noKeyringHere(_ detail: String) -> DeviceIDError {
        DeviceIDError(code: .unavailable, detail: detail, keyringAbsent: true)
    }

    private init(code: Code, detail: String, keyringAbsent: Bool, subject: Subject = .stores) {
        self.code = code
        self.detail = detail
        self.keyringAbsent = keyringAbsent
        self.subject = subject
    }

    public var description: String {
        let summary = subject == .tpm ? code.tpmSummary : code.summary
        return detail.isEmpty ? summary : "\(summary): \(detail)"
    }

    /// A status code. The raw values are part of the C ABI and never change.
    ///
    /// A struct with static members rather than an enum, on purpose: a later version may add a
    /// code (as 0.2.0 added `.noCollection`), and a `switch` over an enum that gains a case stops
    /// compiling (or, resiliently, traps) in clients built before; a `switch` over `Code` has a
    /// `default:` from the start, and an unknown code keeps its raw value and `name`.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// An argument is NULL, empty, too long, not UTF-8 or otherwise malformed.
        public static let invalidArgument = Code(rawValue: -1)
        /// The caller's output buffer cannot hold the answer.
        public static let bufferTooSmall = Code(rawValue: -2)
        /// The store answered: there is no such item.
        public static let notFound = Code(rawValue: -3)
        /// The keyring is locked; nothing was read, written or minted.
        public static let locked = Code(rawValue: -4)
        /// The requested backend cannot be reached (no session bus, no Secret Service).
        public static let unavailable = Code(rawValue: -5)
        /// The store did not answer within the configured deadline.
        public static let timedOut = Code(rawValue: -6)
        /// Stored content failed validation; it was neither returned nor replaced.
        public static let corrupt = Code(rawValue: -7)
        /// Reading or writing the file store failed (disk full, read-only, I/O error).
        public static let io = Code(rawValue: -8)
        /// A location is unsafe (symlink, foreign owner, group/world-writable) or access was denied.
        public static let permission = Code(rawValue: -9)
        /// Memory could not be allocated.
        public static let noMemory = Code(rawValue: -10)
        /// The data exceeds a documented size limit.
        public static let tooLarge = Code(rawValue: -11)
        /// The operation is not available here (for example MD5 refused in FIPS mode).
        public static let unsupported = Code(rawValue: -12)
        /// The keyring answered with an error of its own: the Secret Service, or in a sandbox the
        /// Secret portal.
        public static let keyring = Code(rawValue: -13)
        /// The caller opted out of this identifier.
        public static let optedOut = Code(rawValue: -14)
        /// A bug in DeviceID. Please report it.
        public static let `internal` = Code(rawValue: -15)
        /// The machine ID is empty, all zeros or malformed.
        public static let invalidMachineID = Code(rawValue: -16)
        /// The Secret Service has no default collection (no keyring, database or wallet is open
        /// and set as default), so nothing can be kept there and "none" cannot be believed.
        public static let noCollection = Code(rawValue: -17)
        /// No keyring can take the secret here (none answers, or none is open as the default
        /// collection), no Secret portal can seal it, and the file backend was not chosen: nothing
        /// was written, as no secret goes to a file in the clear unless the caller asked for that.
        public static let noKeyring = Code(rawValue: -18)

        /// Every code, in ABI order.
        public static let all: [Code] = [
            .invalidArgument, .bufferTooSmall, .notFound, .locked, .unavailable, .timedOut,
            .corrupt, .io, .permission, .noMemory, .tooLarge, .unsupported, .keyring, .optedOut,
            .internal, .invalidMachineID, .noCollection, .noKeyring,
        ]

        /// The stable symbolic name, shared by Swift, C (`DEVICEID_E_<NAME>`) and Python.
        public var name: String { staticName.description }

        /// One sentence, the text `deviceid_strerror` returns.
        public var summary: String { staticSummary.description }

        /// `name` in static storage, for C callers that keep the pointer.
        public var staticName: StaticString {
            switch self {
            case .invalidArgument: "INVALID_ARGUMENT"
            case .bufferTooSmall: "BUFFER_TOO_SMALL"
            case .notFound: "NOT_FOUND"
            case .locked: "LOCKED"
            case .unavailable: "UNAVAILABLE"
            case .timedOut: "TIMED_OUT"
            case .corrupt: "CORRUPT"
            case .io: "IO"
            case .permission: "PERMISSION"
            case .noMemory: "NO_MEMORY"
            case .tooLarge: "TOO_LARGE"
            case .unsupported: "UNSUPPORTED"
            case .keyring: "KEYRING"
            case .optedOut: "OPTED_OUT"
            case .internal: "INTERNAL"
            case .invalidMachineID: "INVALID_MACHINE_ID"
            case .noCollection: "NO_COLLECTION"
            case .noKeyring: "NO_KEYRING"
            default: "UNKNOWN"
            }
        }

        /// `summary` in static storage.
        public var staticSummary: StaticString {
            switch self {
            case .invalidArgument: "invalid argument"
            case .bufferTooSmall: "output buffer too small"
            case .notFound: "not found"
            case .locked: "the keyring is locked"
            case .unavailable: "store unavailable"
            case .timedOut: "the store did not answer in time"
            case .corrupt: "stored data is corrupt"
            case .io: "input/output error"
            case .permission: "unsafe location or permission denied"
            case .noMemory: "out of memory"
            case .tooLarge: "data too large"
            case .unsupported: "operation not supported"
            case .keyring: "the keyring reported an error"
            case .optedOut: "opted out"
            case .internal: "internal error"
            case .invalidMachineID: "the machine ID is empty, all zeros or malformed"
            case .noCollection: "the Secret Service has no default collection"
            case .noKeyring: "no keyring can keep the secret, and it is not written in plain text"
            default: "unknown status"
            }
        }

        public var description: String { name }

        /// The summary where the TPM failed: the same status, in words about a TPM.
        var tpmSummary: String {
            switch self {
            case .unavailable: "TPM unavailable"
            case .permission: "TPM access denied"
            case .timedOut: "TPM timed out"
            case .locked: "TPM locked out"
            case .io: "TPM error"
            default: summary
            }
        }
    }
}
