import DeviceID
import CDeviceIDLibc

/// `hardware-id`, `attest` and `assert`: the TPM-bound per-app ID, its attestation and App Attest's
/// WebAuthn registration and assertions (docs/HARDWARE-ID.md).
/// Attestation messages are JSON of their own wire format, printed as they are with or without
/// --json, one per line.
extension Commands {
    func hardwareID(_ operands: [String]) throws(DeviceIDError) -> Int32 {
        guard operands.count == 1 else { return usageError("hardware-id takes one APP_ID", command: "hardware-id") }
        let id = try identity.hardwareID(for: operands[0])
        printValue("hardware_id", id.uuidString, [("app_id", Output.quote(operands[0]))])
        return ExitCode.success
    }

    func attest(_ operands: [String], _ invocation: Invocation) throws(DeviceIDError) -> Int32 {
        switch (operands.first, operands.count) {
        case ("enrol"?, 2):
            output.write(try identity.attestationEnrolment(for: operands[1]) + "\n")
        case ("activate"?, 2), ("activate"?, 3):
            let challenge = try Self.readMessage(operands.count == 3 ? operands[2] : "-", "the challenge")
            output.write(try identity.attestationActivation(for: operands[1], challenge: challenge) + "\n")
        case ("certify"?, 2):
            guard let text = invocation.nonce else {
                return usageError("attest certify needs --nonce BASE64 (the server's nonce)", command: "attest")
            }
            guard let nonce = Base64.decode(text) else {
                return usageError("--nonce must be padded base64 (RFC 4648), not '\(text)'", command: "attest")
            }
            let certificate = try invocation.akCertificate.map { (path) throws(DeviceIDError) in
                try Self.readMessage(path, "the AK certificate")
            }
            output.write(try identity.attestation(for: operands[1], nonce: nonce, akCertificate: certificate) + "\n")
        case ("webauthn"?, 2):
            guard let hash = clientDataHash(invocation, "attest webauthn", command: "attest") else {
                return ExitCode.usage
            }
            guard let path = invocation.akCertificate else {
                return usageError("attest webauthn needs --ak-certificate FILE (the CA's AK certificate message)",
                                  command: "attest")
            }
            let certificate = try Self.readMessage(path, "the AK certificate")
            output.write(try identity.webAuthnAttestation(for: operands[1], clientDataHash: hash,
                                                          akCertificate: certificate) + "\n")
        default:
            return usageError("attest takes enrol APP_ID | activate APP_ID [FILE] | certify APP_ID --nonce BASE64 "
                                  + "| webauthn APP_ID --client-data-hash B64URL --ak-certificate FILE",
                              command: "attest")
        }
        return ExitCode.success
    }

    /// `assert APP_ID --client-data-hash B64URL`: a WebAuthn assertion by APP_ID's credential key.
    func assertion(_ operands: [String], _ invocation: Invocation) throws(DeviceIDError) -> Int32 {
        guard operands.count == 1 else {
            return usageError("assert takes one APP_ID (and --client-data-hash B64URL)", command: "assert")
        }
        guard let hash = clientDataHash(invocation, "assert", command: "assert") else { return ExitCode.usage }
        output.write(try identity.webAuthnAssertion(for: operands[0], clientDataHash: hash) + "\n")
        return ExitCode.success
    }

    /// `tpm-pin forget`: forgets this machine's pin for the TPM (docs/STATE.md, "TPM pins").
    func tpmPin(_ operands: [String]) throws(DeviceIDError) -> Int32 {
        guard operands == ["forget"] else { return usageError("tpm-pin takes forget", command: "tpm-pin") }
        let (address, forgotten) = try identity.forgetTPMPin()
        if output.json {
            output.done([("tpm", Output.quote(address.description)), ("forgotten", forgotten ? "true" : "false")])
        } else {
            output.write((forgotten ? "forgot this machine's pin for the TPM at " : "no pin was held for the TPM at ")
                         + address.description + "\n")
        }
        return ExitCode.success
    }

    /// The bytes of --client-data-hash, or nil after reporting the usage error.
    private func clientDataHash(_ invocation: Invocation, _ form: String, command: String) -> [UInt8]? {
        guard let text = invocation.clientDataHash else {
            _ = usageError("\(form) needs --client-data-hash B64URL (SHA-256 of the client data)", command: command)
            return nil
        }
        guard let hash = Base64.decodeURL(text) else {
            _ = usageError("--client-data-hash must be base64url without padding (RFC 4648 §5), not '\(text)'",
                           command: command)
            return nil
        }
        return hash
    }

    /// A wire message from a file, or from standard input for "-": at most 64 KiB of UTF-8.
    static func readMessage(_ path: String, _ what: String) throws(DeviceIDError) -> String {
        let fd = path == "-" ? STDIN_FILENO : dids_open(path, O_RDONLY | O_CLOEXEC, 0)
        guard fd >= 0 else {
            throw DeviceIDError(.io, "cannot open \(what) \(path): \(String(cString: strerror(errno)))")
        }
        defer { if fd != STDIN_FILENO { close(fd) } }
        let limit = TPMAttestation.maximumMessageSize
        var bytes = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw DeviceIDError(.io, "cannot read \(what): \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            bytes += chunk[0..<n]
            guard bytes.count <= limit else { throw DeviceIDError(.tooLarge, "\(what) is longer than \(limit) bytes") }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw DeviceIDError(.invalidArgument, "\(what) is not UTF-8")
        }
        return text
    }
}
