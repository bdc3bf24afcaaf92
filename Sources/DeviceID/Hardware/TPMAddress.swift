/// Which TPM the hardware-bound ID comes from: the kernel's resource manager (`/dev/tpmrm0`),
/// or what `DEVICEID_TPM_TCTI` names, in tpm2-tss's "driver:configuration" form.
///
/// Two drivers are accepted: `device` (a TPM resource manager only, as the kernel says when the
/// path is opened — fstat and sysfs, whatever the path's name: the raw TPM, `/dev/tpm0`, is refused,
/// because a program holding it bypasses the resource manager every other TPM user on the machine
/// relies on) and `swtpm` (a software TPM reached by its Unix socket, for tests:
/// `swtpm:path=/run/t/tpm.sock`).
public struct TPMAddress: Hashable, Sendable, CustomStringConvertible {
    /// The TCTI, DeviceID's own for each: `device` (tcti_device.c), `swtpm` (tcti_swtpm.c).
    public let driver: String
    /// What the TCTI is given: a device path, or `path=SOCKET` for swtpm.
    public let configuration: String
    /// This machine's pin for the TPM there, once attached (`resolvedWithPin()`); not part of
    /// which TPM this is, so not of its equality.
    var pin: TPMPin?

    /// `device:/dev/tpmrm0`.
    public static let kernelResourceManager = TPMAddress(driver: "device", configuration: "/dev/tpmrm0")

    public var description: String { driver + ":" + configuration }

    public static func == (a: TPMAddress, b: TPMAddress) -> Bool {
        a.driver == b.driver && a.configuration == b.configuration
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(driver)
        hasher.combine(configuration)
    }

    private init(driver: String, configuration: String) {
        self.driver = driver
        self.configuration = configuration
    }

    /// Parses a TCTI string; `.invalidArgument` or `.unsupported` with the reason.
    public init(parsing text: String) throws(DeviceIDError) {
        let driver: Substring, rest: Substring
        if let colon = text.firstIndex(of: ":") {
            driver = text[..<colon]
            rest = text[text.index(after: colon)...]
        } else {
            driver = text[...]
            rest = ""
        }
        switch driver {
        case "device":
            let path = rest.isEmpty ? "/dev/tpmrm0" : String(rest)
            let name = path.split(separator: "/").last.map(String.init) ?? ""
            // What the path is, the TPM conversation asks the kernel (dids_tpm_open); the raw
            // device's own name is refused here already, before anything is opened.
            let raw = name.hasPrefix("tpm") && name.count > 3 && name.dropFirst(3).allSatisfy { $0.isASCII && $0.isNumber }
            guard path.hasPrefix("/"), !path.contains("\0"), !raw else {
                throw DeviceIDError(.invalidArgument,
                                    "\(Environment.tpmTCTI)=\(text): only a TPM resource manager (/dev/tpmrm0) is used; "
                                        + "a raw TPM device such as /dev/tpm0 bypasses the resource manager other programs rely on")
            }
            self.init(driver: "device", configuration: path)
        case "swtpm":
            // Only a Unix socket: DeviceID's swtpm TCTI (tcti_swtpm.c) speaks to PATH and its
            // control socket PATH.ctrl, each byte within the conversation's deadline.
            guard rest.hasPrefix("path=/"), !rest.contains(","), !rest.contains("\0") else {
                throw DeviceIDError(.unsupported,
                                    "\(Environment.tpmTCTI)=\(text): a software TPM is reached by its Unix socket only "
                                        + "(\"swtpm:path=/absolute/tpm.sock\")")
            }
            self.init(driver: "swtpm", configuration: String(rest))
        default:
            throw DeviceIDError(.unsupported,
                                "\(Environment.tpmTCTI)=\(text): the TCTI \"\(driver)\" is not supported "
                                    + "(\"device:/dev/tpmrm0\" or \"swtpm:path=SOCKET\")")
        }
    }

    /// `DEVICEID_TPM_TCTI` (through secure_getenv), or the kernel's resource manager. It names a
    /// path, so bytes that are not UTF-8 are refused as every path from the environment is.
    public static func resolved() throws(DeviceIDError) -> TPMAddress {
        let remedy: Words = "name a TPM whose path is UTF-8 in \(Environment.tpmTCTI), or unset it for /dev/tpmrm0"
        guard let text = try Environment.path(Environment.tpmTCTI, remedy: remedy) else { return .kernelResourceManager }
        return try TPMAddress(parsing: text)
    }
}
