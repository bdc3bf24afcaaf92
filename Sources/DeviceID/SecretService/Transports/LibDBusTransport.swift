import CDeviceIDLibc
import CDeviceIDLibraries

/// The Secret Service's messages over libdbus, for a process forked from one where GLib's D-Bus
/// already ran (GLib serves every connection from one worker thread that does not exist in the
/// child): a private connection with no threads, opened by this process. The connection belongs
/// to the process that opened it; a child of this child opens its own. libdbus itself is loaded
/// here, on first use (`CDeviceIDLibraries.h`).
///
/// Secrets cross the (local, per-user) bus in the Secret Service's "plain" algorithm, which
/// libsecret itself falls back to. Every step, the connection's registration included, is
/// bounded by what is left of the conversation's deadline (libdbus's own `dbus_bus_register`
/// waits without one: > 35 s with the bus daemon stopped, measured).
final class LibDBusTransport: SecretServiceTransport {
    private static let lock = PThreadMutex()
    // Guarded by `lock`: this process's connection, the process that opened it, its unique name
    // (Hello's answer), and the plain transfer session opened on it.
    nonisolated(unsafe) private static var connection: OpaquePointer?
    nonisolated(unsafe) private static var owner: pid_t = 0
    nonisolated(unsafe) private static var name = ""
    nonisolated(unsafe) private static var session: String?

    private static let bus = (name: "org.freedesktop.DBus", path: "/org/freedesktop/DBus")

    static func conversation<T>(
        address: String, end: Int, _ body: (any SecretServiceTransport) throws(DeviceIDError) -> T
    ) throws(DeviceIDError) -> T {
        switch OnDemandLibrary.dbus.state() {
        case .loaded:
            break
        case .failed(let error):
            throw error
        case .absent(let error):
            // Here perhaps because GLib is absent too: then both reasons.
            let glib = OnDemandLibrary.glib
            throw glib.isLoaded ? error : DeviceIDError(.unavailable, glib.failure + "; nor libdbus: " + error.detail)
        }
        return try lock.withLock(until: end, "the process's Secret Service connection") { () throws(DeviceIDError) -> T in
            try Headroom.requireDescriptors(Headroom.keyringDescriptors, for: "a Secret Service conversation")
            let transport = LibDBusTransport(connection: try currentConnection(address, end: end), end: end)
            do throws(DeviceIDError) {
                return try body(transport)
            } catch where error.code == .unavailable || error.code == .timedOut {
                // Perhaps the bus went away, or a reply is still on its way: start afresh next time.
                dropConnection()
                throw error
            }
        }
    }

    private static func currentConnection(_ address: String, end: Int) throws(DeviceIDError) -> OpaquePointer {
        if let connection, owner == getpid() { return connection }
        // A connection inherited from the parent shares its socket: never used, never closed here.
        connection = nil
        session = nil
        var error = DBusError()
        dids_dbus_error_init(&error)
        guard let opened = dids_dbus_connection_open_private(address, &error) else {
            throw failure(&error, "cannot connect to the session bus", .connecting)
        }
        dids_dbus_connection_set_exit_on_disconnect(opened, 0)
        // The authentication handshake first, by hand: inside a blocking call libdbus waits for it
        // with no timeout at all (poll -1, measured with the bus daemon stopped).
        while dids_dbus_connection_get_is_authenticated(opened) == 0 {
            let left = end - Monotonic.milliseconds()
            let alive = left > 0 && dids_dbus_connection_read_write(opened, Int32(clamping: left)) != 0
            guard alive else {
                dids_dbus_connection_close(opened)
                dids_dbus_connection_unref(opened)
                if left > 0 { throw DeviceIDError.noKeyringHere("the session bus closed the connection while authenticating") }
                throw DeviceIDError(.timedOut, "the session bus did not complete authentication in time")
            }
        }
        // Hello registers the connection with the bus, within the deadline.
        let hello = MethodCall(destination: bus.name, path: bus.path, interface: bus.name, member: "Hello",
                               context: "cannot connect to the session bus")
        do throws(DeviceIDError) {
            let reply = try LibDBusTransport(connection: opened, end: end)
                .call(hello, timeout: remaining(until: end), secretLimit: nil, phase: .connecting)
            guard let unique = reply[safe: 0]?.string else { throw SecretService.malformed("Hello") }
            name = unique
        } catch {
            dids_dbus_connection_close(opened)
            dids_dbus_connection_unref(opened)
            throw error
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
        session = nil
    }

    private static func remaining(until end: Int) throws(DeviceIDError) -> Int32 {
        let left = end - Monotonic.milliseconds()
        guard left > 0 else { throw DeviceIDError(.timedOut, "the conversation's deadline passed") }
        return Int32(clamping: left)
    }

    /// A libdbus error through the Secret Service's one error table (and freed).
    private static func failure(_ error: inout DBusError, _ context: String, _ phase: SecretService.Phase) -> DeviceIDError {
        defer { dids_dbus_error_free(&error) }
        return SecretService.error(name: error.name.map { String(cString: $0) },
                                   message: error.message.map { String(cString: $0) } ?? "no message",
                                   context: context, phase: phase)
    }

    // MARK: One conversation

    private let connection: OpaquePointer
    private let end: Int

    private init(connection: OpaquePointer, end: Int) {
        self.connection = connection
        self.end = end
    }

    /// A method call message, or nil when a name is invalid (libdbus would abort on it).
    private func message(_ call: MethodCall) throws(DeviceIDError) -> OpaquePointer {
        guard DBusSyntax.isValid(call) else { throw SecretService.malformed("a name or object path to call") }
        guard let message = dids_dbus_message_new_method_call(call.destination, call.path, call.interface, call.member) else {
            throw DeviceIDError(.noMemory, "libdbus could not build a message")
        }
        var iterator = DBusMessageIter()
        dids_dbus_message_iter_init_append(message, &iterator)
        do throws(DeviceIDError) {
            try LibDBusCoding.append(call.arguments, to: &iterator)
        } catch {
            dids_dbus_message_unref(message)
            throw error
        }
        return message
    }

    func call(_ call: MethodCall, timeout: Int32, secretLimit: Int?) throws(DeviceIDError) -> [DBusValue] {
        try self.call(call, timeout: timeout, secretLimit: secretLimit, phase: .calling)
    }

    private func call(_ call: MethodCall, timeout: Int32, secretLimit: Int?,
                      phase: SecretService.Phase) throws(DeviceIDError) -> [DBusValue] {
        let message = try message(call)
        defer { dids_dbus_message_unref(message) }
        var error = DBusError()
        dids_dbus_error_init(&error)
        guard let reply = dids_dbus_connection_send_with_reply_and_block(connection, message, timeout, &error) else {
            throw Self.failure(&error, call.context, phase)
        }
        defer { dids_dbus_message_unref(reply) }
        return try LibDBusCoding.arguments(of: reply, secretLimit: secretLimit)
    }

    func send(_ call: MethodCall) {
        guard let message = try? message(call) else { return }
        dids_dbus_message_set_no_reply(message, 1)
        dids_dbus_connection_send(connection, message, nil)
        dids_dbus_message_unref(message)
        // Written out, waiting 100 ms at most (dbus_connection_flush waits without a bound).
        _ = dids_dbus_connection_read_write(connection, 100)
    }

    var uniqueName: String { Self.name }

    func awaitSignal(path: String, interface: String, member: String, owner: String, end: Int,
                     gone: DeviceIDError, start: () throws(DeviceIDError) -> Void) throws(DeviceIDError) -> [DBusValue]? {
        guard DBusSyntax.isObjectPath(path), DBusSyntax.isInterface(interface), DBusSyntax.isMember(member),
              DBusSyntax.isBusName(owner)
        else {
            throw SecretService.unwatchable(path)
        }
        // The names are checked, so the rules cannot be broken out of by a quote. The second
        // watches the provider's name: a provider that exits never sends the signal.
        let rules = [DBusValue.string("type='signal',interface='\(interface)',member='\(member)',path='\(path)'"),
                     DBusValue.string("type='signal',sender='\(Self.bus.name)',interface='\(Self.bus.name)',"
                        + "member='NameOwnerChanged',path='\(Self.bus.path)',arg0='\(owner)'")]
        func bus(_ member: String, _ rule: DBusValue) -> MethodCall {
            MethodCall(destination: Self.bus.name, path: Self.bus.path, interface: Self.bus.name, member: member,
                       arguments: [rule], context: "cannot watch for \(member)")
        }
        for rule in rules { _ = try call(bus("AddMatch", rule), timeout: Self.remaining(until: end), secretLimit: nil) }
        defer { for rule in rules { send(bus("RemoveMatch", rule)) } }
        try start()
        let sender = try uniqueOwner(of: owner, until: end, gone: gone)
        while true {
            while let message = dids_dbus_connection_pop_message(connection) {
                defer { dids_dbus_message_unref(message) }
                // Only the bus daemon speaks for a name's owner: anyone can send a signal of that name.
                if dids_dbus_message_is_signal(message, Self.bus.name, "NameOwnerChanged") != 0,
                   dids_dbus_message_get_sender(message).map({ String(cString: $0) }) == Self.bus.name,
                   let change = try? LibDBusCoding.arguments(of: message, secretLimit: nil),
                   SecretService.ownerLeft(change, owner) {
                    throw gone
                }
                guard dids_dbus_message_is_signal(message, interface, member) != 0,
                      dids_dbus_message_get_path(message).map({ String(cString: $0) }) == path,
                      dids_dbus_message_get_sender(message).map({ String(cString: $0) }) == sender
                else { continue }
                return try LibDBusCoding.arguments(of: message, secretLimit: nil)
            }
            let left = end - Monotonic.milliseconds()
            guard left > 0 else { return nil }
            guard dids_dbus_connection_read_write(connection, Int32(clamping: left)) != 0 else {
                throw DeviceIDError(.unavailable, "the session bus went away while \(member) was awaited")
            }
        }
    }

    func transferSession(_ conversation: SecretService.Conversation) throws(DeviceIDError) -> String {
        if let session = Self.session { return session }
        let reply = try conversation.call(SecretService.Spec.servicePath, SecretService.Spec.service, "OpenSession",
                                          [.string("plain"), .variant(.string(""))], "cannot open a session")
        guard let path = reply[safe: 1]?.objectPath else { throw SecretService.malformed("OpenSession") }
        Self.session = path
        return path
    }

    func dropTransferSession() { Self.session = nil }
}

extension LibDBusTransport {
    /// Its lazily made locks, made before fork() (`LazyGlobals`).
    static func settleLazyGlobals() { _ = lock }
}
