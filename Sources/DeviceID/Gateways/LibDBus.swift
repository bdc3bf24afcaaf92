import CDeviceIDSupport
import CDeviceIDLibc

/// The Secret Service client of a process forked from one where GLib's D-Bus already ran: GLib
/// serves every connection from one worker thread that does not exist in the child, so there a
/// private libdbus connection — no threads, opened by this process — carries the same operations
/// (`SecretServiceWire`). The connection belongs to the process that opened it; a child of this
/// child opens its own.
///
/// libdbus itself is loaded only here, on first use (`CDeviceIDLibDBus.h`).
///
/// Differences from the libsecret path, by design: secrets cross the (local, per-user) bus in the
/// Secret Service's "plain" algorithm, which libsecret itself falls back to, and every call is
/// bounded by the same deadline with libdbus's own timeouts instead of a watchdog thread.
enum LibDBus {
    private static let lock = PThreadMutex()
    // Guarded by `lock`: this process's connection, and the process that opened it.
    nonisolated(unsafe) private static var connection: OpaquePointer?
    nonisolated(unsafe) private static var owner: pid_t = 0

    private static let forkHandler: Void = ForkedChild.onFork { LibDBus.lock.reinitializeInChild() }

    static func session<T>(
        _ deadline: LibSecret.Deadline,
        _ body: (any SecretServiceWire) throws(DeviceIDError) -> T
    ) throws(DeviceIDError) -> T {
        _ = forkHandler
        guard dids_libdbus_load() == 0 else {
            throw DeviceIDError(.unavailable, String(cString: dids_libdbus_error()))
        }
        return try lock.withLock { () throws(DeviceIDError) -> T in
            try Headroom.requireDescriptors(Headroom.keyringDescriptors, for: "a Secret Service conversation")
            let connection = try currentConnection()
            let session = Session(connection: connection, deadline: deadline,
                                  end: Session.now() + Int(deadline.session))
            do throws(DeviceIDError) {
                return try body(session)
            } catch where error.code == .unavailable || error.code == .timedOut {
                // Perhaps the bus went away: start afresh next time.
                dropConnection()
                throw error
            }
        }
    }

    private static func currentConnection() throws(DeviceIDError) -> OpaquePointer {
        if let connection, owner == getpid() { return connection }
        // A connection inherited from the parent shares its socket: never used, never closed here.
        connection = nil
        let address: String
        if let value = Environment.value("DBUS_SESSION_BUS_ADDRESS") {
            address = value
        } else if let runtime = Environment.value("XDG_RUNTIME_DIR") {
            address = "unix:path=\(runtime)/bus"
        } else {
            throw DeviceIDError.noKeyringHere("no session bus")
        }
        var error = DBusError()
        dids_dbus_error_init(&error)
        guard let opened = dids_dbus_connection_open_private(address, &error) else {
            throw translate(&error, "cannot connect to the session bus", unavailable: true)
        }
        dids_dbus_connection_set_exit_on_disconnect(opened, 0)
        guard dids_dbus_bus_register(opened, &error) != 0 else {
            dids_dbus_connection_close(opened)
            dids_dbus_connection_unref(opened)
            throw translate(&error, "cannot connect to the session bus", unavailable: true)
        }
        connection = opened
        owner = getpid()
        return opened
    }

    private static func dropConnection() {
        if let connection, owner == getpid() {
            dids_dbus_connection_close(connection)
            dids_dbus_connection_unref(connection)
        }
        connection = nil
    }

    /// A libdbus error as a DeviceIDError (and frees it), by the same rules as GLib's.
    static func translate(_ error: inout DBusError, _ context: String, unavailable: Bool = false) -> DeviceIDError {
        defer { dids_dbus_error_free(&error) }
        let name = error.name.map { String(cString: $0) } ?? ""
        let message = Redaction.redacted(error.message.map { String(cString: $0) } ?? "no message")
        let detail = "\(context): \(message)"
        switch name {
        // No bus, or no Secret Service on it: nothing here can hold the ID (docs/STATE.md).
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner",
             "org.freedesktop.DBus.Error.NoServer", "org.freedesktop.DBus.Error.Disconnected",
             "org.freedesktop.DBus.Error.FileNotFound", "org.freedesktop.DBus.Error.Spawn.ServiceNotFound":
            return DeviceIDError.noKeyringHere(detail)
        // A Secret Service that is installed but failed to start may hold the ID.
        case "org.freedesktop.DBus.Error.Spawn.ExecFailed", "org.freedesktop.DBus.Error.Spawn.ChildExited",
             "org.freedesktop.DBus.Error.Spawn.ChildSignaled", "org.freedesktop.DBus.Error.Spawn.Failed":
            return DeviceIDError(.unavailable, detail)
        case "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Timeout",
             "org.freedesktop.DBus.Error.TimedOut":
            return DeviceIDError(.timedOut, detail)
        case "org.freedesktop.Secret.Error.IsLocked":
            return DeviceIDError(.locked, detail)
        default:
            return unavailable ? DeviceIDError.noKeyringHere(detail) : DeviceIDError(.keyring, detail)
        }
    }
}

extension LibDBus {
    /// One bounded conversation over this process's libdbus connection.
    final class Session: SecretServiceWire {
        let connection: OpaquePointer
        let deadline: LibSecret.Deadline
        /// CLOCK_MONOTONIC milliseconds at which the conversation must end.
        let end: Int

        init(connection: OpaquePointer, deadline: LibSecret.Deadline, end: Int) {
            self.connection = connection
            self.deadline = deadline
            self.end = end
        }

        var busName: String { Environment.value("SECRET_SERVICE_BUS_NAME") ?? "org.freedesktop.secrets" }

        static func now() -> Int {
            var t = timespec()
            clock_gettime(CLOCK_MONOTONIC, &t)
            return t.tv_sec * 1000 + t.tv_nsec / 1_000_000
        }

        /// What is left of the deadline for the next call, at most one call's deadline.
        private func remaining() throws(DeviceIDError) -> Int32 {
            let left = end - Self.now()
            guard left > 0 else {
                throw DeviceIDError(.timedOut, "the Secret Service did not answer within \(deadline.session) ms")
            }
            return Int32(min(left, Int(deadline.milliseconds)))
        }

        /// Sends a method call built by `append` and waits for its reply within the deadline.
        private func call(_ destination: String, _ path: String, _ interface: String, _ method: String,
                          _ context: String, _ append: (inout DBusMessageIter) -> Void = { _ in })
            throws(DeviceIDError) -> Reply {
            guard let message = dids_dbus_message_new_method_call(destination, path, interface, method) else {
                throw DeviceIDError(.noMemory)
            }
            defer { dids_dbus_message_unref(message) }
            var iterator = DBusMessageIter()
            dids_dbus_message_iter_init_append(message, &iterator)
            append(&iterator)
            var error = DBusError()
            dids_dbus_error_init(&error)
            let timeout = try remaining()
            guard let reply = dids_dbus_connection_send_with_reply_and_block(connection, message, timeout, &error) else {
                throw LibDBus.translate(&error, context)
            }
            return Reply(reply)
        }

        private func property(_ path: String, _ interface: String, _ name: String) throws(DeviceIDError) -> Reply {
            try call(busName, path, SecretServiceNames.properties, "Get", "cannot read \(name)") { iterator in
                Wire.append(&iterator, string: interface)
                Wire.append(&iterator, string: name)
            }
        }

        func readAlias(_ name: String) throws(DeviceIDError) -> String {
            let reply = try call(busName, SecretServiceNames.servicePath, SecretServiceNames.service, "ReadAlias",
                                 "cannot read the \(name) collection") { Wire.append(&$0, string: name) }
            var iterator = reply.iterator()
            return Wire.string(&iterator) ?? "/"
        }

        func boolProperty(_ path: String, _ interface: String, _ name: String) throws(DeviceIDError) -> Bool? {
            try property(path, interface, name, Wire.bool)
        }

        func stringProperty(_ path: String, _ interface: String, _ name: String) throws(DeviceIDError) -> String? {
            try property(path, interface, name, Wire.string)
        }

        /// A property's value, read out of its variant by `read`.
        private func property<T>(_ path: String, _ interface: String, _ name: String,
                                 _ read: (inout DBusMessageIter) -> T?) throws(DeviceIDError) -> T? {
            let reply = try property(path, interface, name)
            var iterator = reply.iterator()
            var value = DBusMessageIter()
            guard Wire.enter(&iterator, &value, Wire.variant) else { return nil }
            return read(&value)
        }

        func nameOwner(_ name: String) -> String? {
            guard let reply = try? call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                        "GetNameOwner", "GetNameOwner", { Wire.append(&$0, string: name) })
            else { return nil }
            var iterator = reply.iterator()
            return Wire.string(&iterator)
        }

        func booleanCall(_ destination: String, _ path: String, _ interface: String, _ method: String,
                         _ argument: String) -> Bool? {
            guard let reply = try? call(destination, path, interface, method, method, { Wire.append(&$0, string: argument) })
            else { return nil }
            var iterator = reply.iterator()
            return Wire.bool(&iterator)
        }

        func unlock(_ path: String) throws(DeviceIDError) -> Bool {
            let reply = try call(busName, SecretServiceNames.servicePath, SecretServiceNames.service, "Unlock",
                                 "cannot unlock the default collection") { Wire.append(&$0, paths: [path]) }
            var iterator = reply.iterator()
            let unlocked = Wire.paths(&iterator)
            dids_dbus_message_iter_next(&iterator)
            let prompt = Wire.string(&iterator) ?? "/"
            if unlocked.contains(path) { return true }
            guard prompt != "/" else { return false }
            guard let result = try runPrompt(prompt) else { return false }
            var value = result.iterator()
            return Wire.paths(&value).contains(path)
        }

        func searchPaths(_ attributes: [(String, String)]) throws(DeviceIDError) -> (unlocked: [String], locked: [String]) {
            let reply = try call(busName, SecretServiceNames.servicePath, SecretServiceNames.service, "SearchItems",
                                 "search failed") { Wire.append(&$0, attributes: attributes) }
            var iterator = reply.iterator()
            let unlocked = Wire.paths(&iterator)
            dids_dbus_message_iter_next(&iterator)
            return (unlocked, Wire.paths(&iterator))
        }

        /// A "plain" transfer session: the secret travels as it is over the local bus.
        private func openSession() throws(DeviceIDError) -> String {
            let reply = try call(busName, SecretServiceNames.servicePath, SecretServiceNames.service, "OpenSession",
                                 "cannot open a session") { iterator in
                Wire.append(&iterator, string: "plain")
                Wire.append(&iterator, variantString: "")
            }
            var iterator = reply.iterator()
            dids_dbus_message_iter_next(&iterator)
            guard let session = Wire.string(&iterator) else { throw DeviceIDError(.keyring, "no session path") }
            return session
        }

        func secrets(_ paths: [String], limit: Int) throws(DeviceIDError) -> [[UInt8]] {
            let session = try openSession()
            let reply = try call(busName, SecretServiceNames.servicePath, SecretServiceNames.service, "GetSecrets",
                                 "cannot load the secret") { iterator in
                Wire.append(&iterator, paths: paths)
                Wire.append(&iterator, string: session, type: Wire.objectPath)
            }
            var found = [String: [UInt8]]()
            var iterator = reply.iterator()
            try Wire.forEachEntry(&iterator) { (path, value) throws(DeviceIDError) in
                var secret = DBusMessageIter()
                guard Wire.enter(&value, &secret, Wire.structure) else { return }
                dids_dbus_message_iter_next(&secret)  // session
                dids_dbus_message_iter_next(&secret)  // parameters
                found[path] = try Wire.bytes(&secret, limit: limit)
            }
            var out = [[UInt8]]()
            for path in paths {
                guard let secret = found.removeValue(forKey: path) else {
                    throw DeviceIDError(.keyring, LibSecret.Session.secretNotLoaded)
                }
                out.append(secret)
            }
            return out
        }

        func itemProperties(_ path: String) throws(DeviceIDError) -> (attributes: [String: String], modified: UInt64) {
            let reply = try call(busName, path, SecretServiceNames.properties, "GetAll", "cannot read an item") {
                Wire.append(&$0, string: SecretServiceNames.item)
            }
            var attributes = [String: String]()
            var modified: UInt64 = 0
            var iterator = reply.iterator()
            try Wire.forEachEntry(&iterator) { (name, entry) throws(DeviceIDError) in
                var value = DBusMessageIter()
                guard Wire.enter(&entry, &value, Wire.variant) else { return }
                if name == "Attributes" { attributes = Wire.stringDictionary(&value) }
                if name == "Modified" { modified = Wire.uint64(&value) ?? 0 }
            }
            return (attributes, modified)
        }

        func createItem(in collection: String, label: String, attributes: [(String, String)],
                        value: [UInt8]) throws(DeviceIDError) -> String {
            let session = try openSession()
            let isText = !value.contains(0) && UTF8Validation.isValid(value)
            let reply = try call(busName, collection, SecretServiceNames.collection, "CreateItem",
                                 "cannot store the item") { iterator in
                Wire.append(&iterator, itemLabel: label, attributes: attributes)
                Wire.append(&iterator, secretIn: session, value: value,
                            contentType: isText ? "text/plain" : "application/octet-stream")
                Wire.append(&iterator, bool: true)
            }
            var iterator = reply.iterator()
            let item = Wire.string(&iterator) ?? "/"
            dids_dbus_message_iter_next(&iterator)
            let prompt = Wire.string(&iterator) ?? "/"
            if item != "/" { return item }
            guard prompt != "/", let result = try runPrompt(prompt) else {
                throw DeviceIDError(.keyring, "cannot store the item: the Secret Service created none")
            }
            var created = result.iterator()
            guard let path = Wire.string(&created), path != "/" else {
                throw DeviceIDError(.keyring, "cannot store the item: the prompt created none")
            }
            return path
        }

        func deleteItem(_ path: String) throws(DeviceIDError) {
            let reply = try call(busName, path, SecretServiceNames.item, "Delete", "cannot delete the item")
            var iterator = reply.iterator()
            let prompt = Wire.string(&iterator) ?? "/"
            if prompt != "/" {
                guard try runPrompt(prompt) != nil else { throw DeviceIDError(.locked, "the prompt was dismissed") }
            }
        }

        /// Runs a prompt (`Prompt("")`) and waits for its Completed signal within the deadline; the
        /// prompt's result (inside its variant), or nil when it was dismissed. At the deadline the
        /// prompt is dismissed where that is safe and the call is `.locked`.
        private func runPrompt(_ prompt: String) throws(DeviceIDError) -> Reply? {
            let rule = "type='signal',interface='\(SecretServiceNames.prompt)',member='Completed',path='\(prompt)'"
            var error = DBusError()
            dids_dbus_error_init(&error)
            dids_dbus_bus_add_match(connection, rule, &error)
            if dids_dbus_error_is_set(&error) != 0 { throw LibDBus.translate(&error, "cannot watch the prompt") }
            defer { dids_dbus_bus_remove_match(connection, rule, nil) }
            _ = try call(busName, prompt, SecretServiceNames.prompt, "Prompt", "cannot run the prompt") {
                Wire.append(&$0, string: "")
            }
            while true {
                while let message = dids_dbus_connection_pop_message(connection) {
                    let reply = Reply(message)
                    guard dids_dbus_message_is_signal(message, SecretServiceNames.prompt, "Completed") != 0,
                          dids_dbus_message_get_path(message).map({ String(cString: $0) }) == prompt
                    else { continue }
                    var iterator = reply.iterator()
                    if Wire.bool(&iterator) == true { return nil }  // dismissed
                    dids_dbus_message_iter_next(&iterator)
                    var value = DBusMessageIter()
                    guard Wire.enter(&iterator, &value, Wire.variant) else { return nil }
                    return Reply(reply, value: value)
                }
                let left = end - Self.now()
                guard left > 0 else { break }
                guard dids_dbus_connection_read_write(connection, Int32(min(left, Int(Int32.max)))) != 0 else {
                    throw DeviceIDError(.unavailable, "the session bus went away while a prompt was open")
                }
            }
            if mayDismissPrompts(), let dismiss = dids_dbus_message_new_method_call(busName, prompt,
                                                                                 SecretServiceNames.prompt, "Dismiss") {
                dids_dbus_message_set_no_reply(dismiss, 1)
                dids_dbus_connection_send(connection, dismiss, nil)
                dids_dbus_connection_flush(connection)
                dids_dbus_message_unref(dismiss)
            }
            throw LibSecret.promptExpired(deadline)
        }
    }

    /// A received message, released with its owner; `value` points into it.
    final class Reply {
        let message: OpaquePointer
        private let value: DBusMessageIter?
        private let parent: Reply?

        init(_ message: OpaquePointer) {
            self.message = message
            value = nil
            parent = nil
        }

        /// A view of a value inside `parent`'s message.
        init(_ parent: Reply, value: DBusMessageIter) {
            message = parent.message
            self.value = value
            self.parent = parent
        }

        func iterator() -> DBusMessageIter {
            if let value { return value }
            var iterator = DBusMessageIter()
            dids_dbus_message_iter_init(message, &iterator)
            return iterator
        }

        deinit { if parent == nil { dids_dbus_message_unref(message) } }
    }
}
