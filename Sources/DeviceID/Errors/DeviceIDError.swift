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

    public init(_ code: Code) {
        self.init(code: code, detail: "", keyringAbsent: false)
    }

    /// Generic and disfavoured so that a message written in place is `Words` (the init below): a
    /// literal would otherwise be a `String`, whose interpolation is inlined at every site.
    @_disfavoredOverload
    public init<Detail: StringProtocol>(_ code: Code, _ detail: Detail) {
        self.init(code: code, detail: String(detail), keyringAbsent: false)
    }

    /// The library's and the command's own errors: the detail written in place, as `Words`
    /// (Support/Words.swift).
    package init(_ code: Code, _ detail: Words) {
        self.init(code: code, detail: detail.text, keyringAbsent: false)
    }

    /// The same failure, about `subject`.
    func about(_ subject: Subject) -> DeviceIDError {
        DeviceIDError(code: code, detail: detail, keyringAbsent: keyringAbsent, subject: subject)
    }

    /// `.unavailable`, saying that no Secret Service is there in this context.
    static func noKeyringHere(_ detail: Words) -> DeviceIDError {
        DeviceIDError(code: .unavailable, detail: detail.text, keyringAbsent: true)
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

        // The codes, `all`, `staticName`, `staticSummary` and `tpmSummary`: DeviceIDError+Codes.swift,
        // written by scripts/gen-abi from the one table of statuses (Sources/CDeviceIDAPI/statuses.tsv).

        /// The stable symbolic name, shared by Swift, C (`DEVICEID_E_<NAME>`) and Python.
        public var name: String { staticName.description }

        /// One sentence, the text `deviceid_strerror` returns.
        public var summary: String { staticSummary.description }

        public var description: String { name }
    }
}
