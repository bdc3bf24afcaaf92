/// Where a secret is kept: what `DeviceIdentity.storeSecret` answers, so that a caller (the CLI's
/// `--json` `location`) can say where the secret went.
///
/// A secret goes to a file in the clear only where the caller chose the file backend; in `auto`
/// with no keyring to take it, `storeSecret` fails with `.noKeyring` instead (docs/ENVIRONMENTS.md, "Secrets: never in plain text unless chosen").
public enum SecretLocation: Sendable, Hashable, CustomStringConvertible {
    /// An item in the Secret Service's default collection.
    case keyring
    /// A file in the store directory, sealed with the sandboxed app's key from the Secret portal.
    case sealedFile(path: String)
    /// A file in the store directory (mode 0600, in a 0700 directory), in the clear.
    case plaintextFile(path: String)

    /// `keyring`, `sealed-file` or `plaintext-file`.
    public var name: String {
        switch self {
        case .keyring: "keyring"
        case .sealedFile: "sealed-file"
        case .plaintextFile: "plaintext-file"
        }
    }

    /// The file's path; nil for the keyring.
    public var path: String? {
        switch self {
        case .keyring: nil
        case .sealedFile(let path), .plaintextFile(let path): path
        }
    }

    public var description: String { path.map { "\(name) \($0)" } ?? name }
}
