extension SecretService {
    /// One bounded conversation with the Secret Service: the operations DeviceID needs, written
    /// once over whichever transport carries them. Every value read from a reply is checked for
    /// its type (and object paths for their syntax) before it is used or sent back.
    final class Conversation {
        let transport: any SecretServiceTransport
        /// The bus name the Secret Service answers on (`SECRET_SERVICE_BUS_NAME` honoured).
        let busName: String
        let deadline: Deadline
        /// CLOCK_MONOTONIC milliseconds at which the conversation must end.
        let end: Int
        /// How item values cross the bus (`Transfer`); the transport may only ever downgrade
        /// `.encrypted` where it cannot encrypt (libdbus, no libsecret).
        let transfer: Transfer
        /// Whether KeePassXC serves the Secret Service here; asked before the first write.
        private var keePassXC: Bool?

        init(_ transport: any SecretServiceTransport, busName: String, deadline: Deadline, end: Int,
             transfer: Transfer) {
            self.transport = transport
            self.busName = busName
            self.deadline = deadline
            self.end = end
            self.transfer = transfer
        }

        /// What is left of the deadline for the next call, at most one call's bound.
        func remaining() throws(DeviceIDError) -> Int32 {
            let left = end - Monotonic.milliseconds()
            guard left > 0 else { throw SecretService.deadlinePassed(deadline) }
            return Int32(min(left, Int(deadline.milliseconds)))
        }

        /// A call to the Secret Service (or to `destination`), bounded by what is left.
        func call(_ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue] = [],
                  _ context: String, destination: String? = nil, secretLimit: Int? = nil) throws(DeviceIDError) -> [DBusValue] {
            let message = MethodCall(destination: destination ?? busName, path: path, interface: interface,
                                     member: member, arguments: arguments, context: context)
            do throws(DeviceIDError) {
                return try transport.call(message, timeout: try remaining(), secretLimit: secretLimit)
            } catch where error.code == .timedOut && destination == nil && Monotonic.milliseconds() < end
                && nameHasNoOwner(busName) {
                // No reply with time left, and nobody owns the name any more: the bus said the
                // provider disconnected without replying (NoReply), not that time ran out.
                throw SecretService.providerWentAway(context)
            }
        }

        /// A property of an object of the Secret Service, unwrapped from its variant.
        func property(_ path: String, _ interface: String, _ name: String) throws(DeviceIDError) -> DBusValue? {
            try call(path, Spec.properties, "Get", DBusValue.strings([interface, name]), "cannot read \(name)")[safe: 0]?.unwrapped
        }

        // MARK: The service

        /// The object path of a collection alias, "/" when there is none.
        func readAlias(_ name: String) throws(DeviceIDError) -> String {
            let reply = try call(Spec.servicePath, Spec.service, "ReadAlias", [.string(name)],
                                 "cannot read the \(name) collection")
            guard let path = reply[safe: 0]?.objectPath else { throw SecretService.malformed("ReadAlias") }
            return path
        }

        /// Whether the bus daemon positively says nobody owns `name` (a failed question is not that).
        func nameHasNoOwner(_ name: String) -> Bool {
            let reply = try? call("/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner", [.string(name)],
                                  "NameHasOwner", destination: "org.freedesktop.DBus")
            return reply?[safe: 0]?.boolean == false
        }

        /// The unique name owning `name`, or nil.
        func nameOwner(_ name: String) -> String? {
            let reply = try? call("/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner", [.string(name)],
                                  "GetNameOwner", destination: "org.freedesktop.DBus")
            return reply?[safe: 0]?.string
        }

        /// Whether the default collection (where DeviceID stores) exists and is unlocked, and its
        /// object path. Two D-Bus messages; never prompts, never searches.
        ///
        /// "None" is asked twice before it is believed: GNOME Keyring answers ReadAlias with "/"
        /// not only when there is no such collection but whenever its per-caller lookup of the
        /// collection fails (gkd-secret-service.c, `service_method_read_alias`), which happened
        /// once in 4,096 calls with 512 callers at once (scripts/robustness, the hammer). The
        /// second question costs one round trip, only where there is no default collection.
        func defaultCollection() throws(DeviceIDError) -> (state: CollectionState, path: String) {
            var path = try readAlias("default")
            if path == "/" { path = try readAlias("default") }
            guard path != "/" else { return (.missing, "/") }
            guard let locked = try property(path, Spec.collection, "Locked")?.boolean else {
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
                let provider = provider()
                throw DeviceIDError(.noCollection, "\(provider) has no keyring, database or wallet open "
                    + "and set as the default collection: \(KeyringRemedy.noCollection(provider))")
            case .locked:
                if deadline.interactive || unlockShowsNoDialog(path) {
                    guard try unlock(path) else {
                        let provider = provider()
                        throw DeviceIDError(.locked, "the default collection stayed locked (\(provider)): "
                            + "\(KeyringRemedy.promptDismissed()); "
                            + KeyringRemedy.locked(provider, interactive: true))
                    }
                    return path
                }
                let provider = provider()
                throw DeviceIDError(.locked, "the default collection is locked (\(provider)); "
                    + KeyringRemedy.locked(provider, interactive: false))
            }
        }

        /// Unlocks the object at `path`, running the prompt the service asks for; false if it stayed locked.
        func unlock(_ path: String) throws(DeviceIDError) -> Bool {
            let reply = try call(Spec.servicePath, Spec.service, "Unlock", [DBusValue.paths([path])],
                                 "cannot unlock the default collection")
            guard let unlocked = reply[safe: 0]?.objectPaths, let prompt = reply[safe: 1]?.objectPath else {
                throw SecretService.malformed("Unlock")
            }
            if unlocked.contains(path) { return true }
            guard prompt != "/", let result = try runPrompt(prompt) else { return false }
            return result.objectPaths?.contains(path) == true
        }

        // MARK: Items

        /// The object paths of the items carrying these attributes, unlocked and locked.
        /// Never unlocks anything.
        func searchPaths(_ attributes: [(String, String)]) throws(DeviceIDError) -> (unlocked: [String], locked: [String]) {
            let reply = try call(Spec.servicePath, Spec.service, "SearchItems", [DBusValue.attributes(attributes)],
                                 "search failed")
            guard let unlocked = reply[safe: 0]?.objectPaths, let locked = reply[safe: 1]?.objectPaths else {
                throw SecretService.malformed("SearchItems")
            }
            return (unlocked, locked)
        }

        /// The secrets of unlocked items, in order. A secret that does not come back is an error,
        /// never "none"; one over `limit` bytes is `.tooLarge` and not copied.
        func secrets(_ paths: [String], limit: Int) throws(DeviceIDError) -> [[UInt8]] {
            let session = try transport.transferSession(self)
            let reply = try call(Spec.servicePath, Spec.service, "GetSecrets",
                                 [DBusValue.paths(paths), .objectPath(session)], "cannot load the secret",
                                 secretLimit: limit)
            guard let entries = reply[safe: 0]?.entries else { throw SecretService.malformed("GetSecrets") }
            var out = [[UInt8]]()
            for path in paths {
                guard let entry = entries.first(where: { $0.key == path }), case .secret(let secret) = entry.value else {
                    for index in out.indices { wipe(&out[index]) }
                    throw DeviceIDError(.keyring, SecretService.secretNotLoaded)
                }
                out.append(secret.take())
            }
            return out
        }

        /// An item's attributes and modification time (one D-Bus message).
        func itemProperties(_ path: String) throws(DeviceIDError) -> (attributes: [String: String], modified: UInt64) {
            let reply = try call(path, Spec.properties, "GetAll", [.string(Spec.item)], "cannot read an item")
            guard let entries = reply[safe: 0]?.entries else { throw SecretService.malformed("GetAll") }
            var attributes = [String: String]()
            var modified: UInt64 = 0
            for (name, value) in entries {
                if name == "Attributes" { attributes = value.unwrapped.stringDictionary ?? [:] }
                if name == "Modified" { modified = value.unwrapped.uint64 ?? 0 }
            }
            return (attributes, modified)
        }

        /// Creates an item in the collection at `collection`, replacing one with the same
        /// attributes; returns the new item's path. A prompt (KeePassXC asks one for every item) is run.
        func createItem(in collection: String, label: String, attributes: [(String, String)],
                        value: [UInt8]) throws(DeviceIDError) -> String {
            let session = try transport.transferSession(self)
            // text/plain is what secret-tool stores; anything else is declared as bytes. Checked
            // without making a String, which would be one more copy of the secret.
            let isText = !value.contains(0) && UTF8Validation.isValid(value)
            let secret = TransferredSecret(session: session, bytes: value,
                                           contentType: isText ? "text/plain" : "application/octet-stream")
            let properties = DBusValue.dictionary(key: "s", value: "v", [
                (.string("org.freedesktop.Secret.Item.Label"), .variant(.string(label))),
                (.string("org.freedesktop.Secret.Item.Attributes"), .variant(DBusValue.attributes(attributes))),
            ])
            return try writing { () throws(DeviceIDError) -> String in
                let reply = try call(collection, Spec.collection, "CreateItem",
                                     [properties, .secret(secret), .boolean(true)], "cannot store the item")
                guard let item = reply[safe: 0]?.objectPath, let prompt = reply[safe: 1]?.objectPath else {
                    throw SecretService.malformed("CreateItem")
                }
                if item != "/" { return item }
                guard prompt != "/" else {
                    throw DeviceIDError(.keyring, "cannot store the item: the Secret Service created none")
                }
                guard let result = try runPrompt(prompt) else {
                    throw DeviceIDError(.locked, "cannot store the item: the prompt was dismissed")
                }
                guard let created = result.objectPath, created != "/" else {
                    throw DeviceIDError(.keyring, "cannot store the item: the prompt created none")
                }
                return created
            }
        }

        /// Deletes one item by path. A prompt (KeePassXC confirms deletions) is run.
        func deleteItem(_ path: String) throws(DeviceIDError) {
            try writing { () throws(DeviceIDError) in
                let reply = try call(path, Spec.item, "Delete", [], "cannot delete the item")
                guard let prompt = reply[safe: 0]?.objectPath else { throw SecretService.malformed("Delete") }
                if prompt != "/" {
                    guard try runPrompt(prompt) != nil else { throw DeviceIDError(.locked, "the prompt was dismissed") }
                }
            }
        }

        // MARK: Providers

        /// Every write (an item created or deleted, with its prompt) is one at a time with the
        /// user's other writes to KeePassXC, after its save of the last one (`KeePassXCSaves`).
        private func writing<T>(_ write: () throws(DeviceIDError) -> T) throws(DeviceIDError) -> T {
            if keePassXC == nil {
                let owner = nameOwner(busName)
                keePassXC = owner != nil && nameOwner("org.keepassxc.KeePassXC.MainWindow") == owner
            }
            guard keePassXC == true else { return try write() }
            return try KeePassXCSaves.write(end: end, write)
        }

        /// KWallet keeps a collection "locked" for each client until it asks to unlock it, and
        /// answers with a prompt that completes without a dialog when kwalletd has the wallet open
        /// already. Other providers' unlock prompts ask the person.
        private func unlockShowsNoDialog(_ path: String) -> Bool {
            guard let daemon = kwalletDaemon(),
                  let wallet = (try? property(path, Spec.collection, "Label"))??.string
            else { return false }
            let module = "/modules/" + daemon.dropFirst("org.kde.".count)
            let reply = try? call(module, "org.kde.KWallet", "isOpen", [.string(wallet)], "isOpen", destination: daemon)
            return reply?[safe: 0]?.boolean == true
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
    }

    /// The names the Secret Service specification gives its interfaces and root object.
    enum Spec {
        static let service = "org.freedesktop.Secret.Service"
        static let collection = "org.freedesktop.Secret.Collection"
        static let item = "org.freedesktop.Secret.Item"
        static let prompt = "org.freedesktop.Secret.Prompt"
        static let properties = "org.freedesktop.DBus.Properties"
        static let servicePath = "/org/freedesktop/secrets"
    }
}
