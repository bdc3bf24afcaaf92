/// The Secret Service operations DeviceID needs, as one D-Bus client carries them out within one
/// bounded conversation. Two clients do: libsecret on GLib (`LibSecret.Session`), and libdbus
/// (`LibDBus.Session`) in a process forked from one where GLib's D-Bus already ran, which GLib
/// cannot serve. What DeviceID does with the operations is written once, below. Class-bound:
/// Embedded Swift has existentials of class-bound protocols only.
protocol SecretServiceWire: AnyObject {
    var deadline: LibSecret.Deadline { get }
    /// The bus name the Secret Service answers on (`SECRET_SERVICE_BUS_NAME` honoured).
    var busName: String { get }

    /// The object path of a collection alias, "/" when there is none.
    func readAlias(_ name: String) throws(DeviceIDError) -> String
    func boolProperty(_ path: String, _ interface: String, _ name: String) throws(DeviceIDError) -> Bool?
    func stringProperty(_ path: String, _ interface: String, _ name: String) throws(DeviceIDError) -> String?
    /// The unique name owning `name`, or nil.
    func nameOwner(_ name: String) -> String?
    /// A method taking one string and answering one boolean, or nil when it fails.
    func booleanCall(_ destination: String, _ path: String, _ interface: String, _ method: String,
                     _ argument: String) -> Bool?
    /// Unlocks the object at `path`, running the prompt the service asks for; false if it stayed locked.
    func unlock(_ path: String) throws(DeviceIDError) -> Bool
    /// The items carrying these attributes, unlocked and locked. Never unlocks anything.
    func searchPaths(_ attributes: [(String, String)]) throws(DeviceIDError) -> (unlocked: [String], locked: [String])
    /// The secrets of unlocked items, in order; one over `limit` bytes is `.tooLarge`, not copied.
    func secrets(_ paths: [String], limit: Int) throws(DeviceIDError) -> [[UInt8]]
    /// An item's attributes and modification time.
    func itemProperties(_ path: String) throws(DeviceIDError) -> (attributes: [String: String], modified: UInt64)
    /// Creates an item, replacing one with the same attributes, running the prompt asked for.
    func createItem(in collection: String, label: String, attributes: [(String, String)],
                    value: [UInt8]) throws(DeviceIDError) -> String
    /// Deletes an item, running the prompt asked for.
    func deleteItem(_ path: String) throws(DeviceIDError)
}

enum SecretServiceNames {
    static let service = "org.freedesktop.Secret.Service"
    static let collection = "org.freedesktop.Secret.Collection"
    static let item = "org.freedesktop.Secret.Item"
    static let prompt = "org.freedesktop.Secret.Prompt"
    static let properties = "org.freedesktop.DBus.Properties"
    static let servicePath = "/org/freedesktop/secrets"
}

extension SecretServiceWire {
    /// Whether the default collection (where DeviceID stores) exists and is unlocked, and its
    /// object path. Two D-Bus messages; never prompts, never searches.
    func defaultCollection() throws(DeviceIDError) -> (state: LibSecret.CollectionState, path: String) {
        let path = try readAlias("default")
        guard path != "/" else { return (.missing, "/") }
        guard let locked = try boolProperty(path, SecretServiceNames.collection, "Locked") else {
            throw DeviceIDError(.keyring, "the default collection did not say whether it is locked")
        }
        return (locked ? .locked : .unlocked, path)
    }

    /// The default collection's path, once it is usable: missing is `.noCollection`; locked is
    /// unlocked where that shows no dialog or where the caller is interactive, else `.locked`.
    func usableDefaultCollection() throws(DeviceIDError) -> String {
        let (state, path) = try defaultCollection()
        switch state {
        case .unlocked:
            return path
        case .missing:
            throw DeviceIDError(.noCollection, "\(provider()) has no keyring, database or wallet open "
                + "and set as the default collection")
        case .locked:
            if deadline.interactive || unlockShowsNoDialog(path) {
                guard try unlock(path) else { throw DeviceIDError(.locked, "the default collection stayed locked") }
                return path
            }
            throw DeviceIDError(.locked, "the default collection is locked (\(provider())); "
                + "DeviceID shows no unlock dialog unless interactive mode is on")
        }
    }

    /// KWallet keeps a collection "locked" for each client until it asks to unlock it, and answers
    /// with a prompt that completes without a dialog when kwalletd has the wallet open already.
    /// Other providers' unlock prompts ask the person.
    private func unlockShowsNoDialog(_ path: String) -> Bool {
        guard let daemon = kwalletDaemon(),
              let wallet = try? stringProperty(path, SecretServiceNames.collection, "Label")
        else { return false }
        let module = "/modules/" + daemon.dropFirst("org.kde.".count)
        return booleanCall(daemon, module, "org.kde.KWallet", "isOpen", wallet) == true
    }

    /// kwalletd's bus name when kwalletd is what serves the Secret Service.
    private func kwalletDaemon() -> String? {
        guard let owner = nameOwner(busName) else { return nil }
        return ["org.kde.kwalletd6", "org.kde.kwalletd5"].first { nameOwner($0) == owner }
    }

    /// The program serving the Secret Service, recognized by the other names its connection
    /// owns: "GNOME Keyring", "KeePassXC", "KWallet", or its unique bus name.
    func provider() -> String {
        guard let owner = nameOwner(busName) else { return "no owner of \(busName)" }
        let known = [("org.gnome.keyring", "GNOME Keyring"), ("org.keepassxc.KeePassXC.MainWindow", "KeePassXC"),
                     ("org.kde.kwalletd6", "KWallet"), ("org.kde.kwalletd5", "KWallet")]
        return known.first { nameOwner($0.0) == owner }?.1 ?? "unknown provider \(owner)"
    }

    /// Whether a prompt that outlived the deadline may be dismissed: gnome-keyring 42 aborts when
    /// its unlock prompt is dismissed while the prompter shows (measured on 42.1 under Xvfb), so
    /// there the dialog is left to the person; entering the password later only unlocks.
    func mayDismissPrompts() -> Bool {
        guard let owner = nameOwner(busName) else { return true }
        return nameOwner("org.gnome.keyring") != owner
    }
}

extension LibSecret {
    /// The words for a prompt still open at the deadline, from either client.
    static func promptExpired(_ deadline: Deadline) -> DeviceIDError {
        DeviceIDError(.locked, "a confirmation or unlock is waiting for the user: the Secret Service's prompt "
            + "did not complete within \(deadline.session) ms"
            + (deadline.interactive ? "" : " (DeviceID shows no dialog unless interactive mode is on)"))
    }
}
