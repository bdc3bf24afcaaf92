/// Where the caller's secrets go, and from where they are read (docs/ENVIRONMENTS.md, "Secrets:
/// never in plain text unless chosen"):
///
/// - the keyring when one answers (a file copy from before is left where it is: the file backend,
///   chosen by another program of the user's, may rely on it);
/// - a file, sealed with the app's key from the Secret portal, where a sandbox's portal anchors it;
/// - a file in the clear only where the caller chose the file backend. In `auto`, no keyring to
///   take the secret and no portal to seal it is `.noKeyring`: nothing is written.
///
/// A secret is never copied out of the keyring. A plaintext file written before (by 0.3.0, or by the
/// file backend) is still read where no keyring has the secret, and reported as such. A Secret
/// Service with no default collection may hold the secret in a collection that is not open: a
/// lookup or delete the files cannot answer is `.noCollection` there, never "none".
///
/// This-device-only (docs/STATE.md, "Protection classes"): the secret is stored as a
/// `ThisDeviceSeal` envelope wherever it goes, and a lookup opens any envelope it reads, whatever
/// the configuration: another machine's is `.copied`.
struct SecretKeeper {
    let stores: Stores
    let timeoutMilliseconds: UInt32

    private var files: FileSecrets? { stores.file.map { FileSecrets(file: $0, timeoutMilliseconds: timeoutMilliseconds) } }

    func store(_ key: StoreKey, _ plain: [UInt8]) throws(DeviceIDError) -> SecretLocation {
        let secret = try sealedIfChosen(key, plain)
        switch stores.ask(keyring: { (k) throws(DeviceIDError) -> Bool? in try k.write(key, secret); return true }) {
        case .found, .empty:
            return .keyring
        case .failed(let error):
            throw error
        case .notConfigured:
            guard let files else { throw DeviceIDError(.unavailable, "no store is available") }
            return try files.write(key, secret, refusingPlaintext: nil)
        case .unreachable(let why):
            guard let files else { throw why }
            return try files.write(key, secret, refusingPlaintext: Self.refusal(why))
        }
    }

    func lookup(_ key: StoreKey) throws(DeviceIDError) -> (value: [UInt8], location: SecretLocation)? {
        guard let (stored, location) = try lookupStored(key) else { return nil }
        guard ThisDeviceSeal.isSealed(stored) else { return (stored, location) }
        return (try ThisDeviceSeal.open(stored, context: key.encoded, binding: stores.binding), location)
    }

    private func lookupStored(_ key: StoreKey) throws(DeviceIDError) -> (value: [UInt8], location: SecretLocation)? {
        switch stores.ask(keyring: { (k) throws(DeviceIDError) in try k.read(key) }) {
        case .found(let value): return (value, .keyring)
        case .failed(let error): throw error
        case .unreachable(let why) where why.code == .noCollection:
            if let found = try files?.read(key) { return found }
            throw why
        case .unreachable, .empty, .notConfigured:
            // A secret stored while no Secret Service answered stays readable when one appears.
            return try files?.read(key)
        }
    }

    func delete(_ key: StoreKey) throws(DeviceIDError) -> Bool {
        var deleted = false
        switch stores.ask(keyring: { (k) throws(DeviceIDError) in try k.delete(key) }) {
        case .found(let d): deleted = d
        case .failed(let error): throw error
        case .unreachable(let why) where why.code == .noCollection: throw why
        case .unreachable, .empty, .notConfigured: break
        }
        if try files?.delete(key) == true { deleted = true }
        return deleted
    }

    /// The secret as stored: sealed to this machine with this-device-only (within the size limit,
    /// less the envelope's room), else as given — unless it begins as an envelope does, which a
    /// lookup would take for one.
    private func sealedIfChosen(_ key: StoreKey, _ secret: [UInt8]) throws(DeviceIDError) -> [UInt8] {
        guard stores.protection == .thisDeviceOnly else {
            guard !ThisDeviceSeal.isSealed(secret) else {
                throw DeviceIDError(.invalidArgument, "the secret begins with the bytes that mark a this-device-only "
                                    + "secret (\"DIDTDO1\\0\" or \"DIDTDP7\\0\"), which a lookup would take for one")
            }
            return secret
        }
        let limit = SecretServiceStore.maximumSecretSize - ThisDeviceSeal.overhead(stores.binding)
        guard secret.count <= limit else {
            throw DeviceIDError(.tooLarge, "a this-device-only secret is at most \(limit) bytes (DEVICEID_SECRET_MAX less "
                                + "the \(ThisDeviceSeal.overhead(stores.binding)) bytes of its seal); this one is \(secret.count)")
        }
        do {
            return try ThisDeviceSeal.seal(secret, context: key.encoded, binding: stores.binding)
        } catch {
            throw DeviceIDError(error.code, "a this-device-only secret is sealed by this machine's TPM, and it cannot "
                                + "seal now (nothing was written): \(error.detail)").about(.tpm)
        }
    }

    /// Why nothing was written: no keyring took the secret, and the caller did not choose plain text.
    private static func refusal(_ why: DeviceIDError) -> DeviceIDError {
        DeviceIDError(.noKeyring, "\(why.description); a secret is written to a file in the clear only "
            + "with the file backend chosen. Start or unlock a keyring (GNOME Keyring, KeePassXC with Secret "
            + "Service integration, KWallet) where this runs and store it again, or choose the file backend "
            + "knowingly (--backend file, DEVICEID_BACKEND=file, deviceid_set_backend) to keep it in plain "
            + "text in a 0600 file")
    }
}
