import CDeviceIDLibc
import CDeviceIDLibraries

/// The Secret Service's messages over GLib's D-Bus (GDBus). A conversation that carries a caller's
/// secret uses libsecret's transfer session: the secret crosses the bus encrypted (Diffie-Hellman,
/// AES) and is decrypted into non-pageable memory; identifier records use the "plain" session
/// (`SecretService.Transfer`), and need no libsecret. libsecret is asked for nothing else — its
/// calls that prompt would run prompts their own way — so every conversation follows the one
/// logic of `SecretService.Conversation`.
///
/// Conversations are serialized: GLib's session bus connection and libsecret's service proxy
/// are process-wide, kept between conversations.
final class GDBusTransport: SecretServiceTransport {
    private static let lock = PThreadMutex()
    // All guarded by `lock`: the session bus connection last seen; libsecret's service proxy on it,
    // which holds the encrypted transfer session; the "plain" session's path; the process that
    // first called GLib. That process is set before GLib's first call, so a forked child, in which
    // `usableHere` is false from then on, never reaches GLib locks or objects whose thread it lacks; the lock a child inherits is made free, as every `PThreadMutex` is, by
    // fork_safe_mutex.c. (No fork handler: one registered lazily, from a Swift `static let`, held
    // `swift_once` across `pthread_atfork`, which a fork in another thread could leave in progress
    // for good in the child.)
    nonisolated(unsafe) private static var bus: OpaquePointer?
    nonisolated(unsafe) private static var service: OpaquePointer?
    nonisolated(unsafe) private static var plainSession: String?
    nonisolated(unsafe) private static var gdbusProcess: pid_t = 0

    /// GLib runs every D-Bus connection of a process on one worker thread, started once and never
    /// again (gdbusprivate.c), so in a child forked after it started no connection, old or new,
    /// ever gets an answer: measured, a new one times out in its handshake. Such a child talks to
    /// the Secret Service through `LibDBusTransport` instead.
    /// Nor where GLib is absent: libdbus is tried instead. GLib that could not be loaded for want of
    /// memory or descriptors is an error, not a reason to change transports (libdbus would carry a
    /// caller's secret "plain").
    static func usableHere() throws(DeviceIDError) -> Bool {
        guard lock.withLock({ gdbusProcess == 0 || gdbusProcess == getpid() }) else { return false }
        switch OnDemandLibrary.glib.state() {
        case .loaded: return true
        case .absent: return false
        case .failed(let error): throw error
        }
    }

    /// Runs `body` over the session bus, every step cancelled at the deadline by a watchdog.
    static func conversation<T>(
        deadline: SecretService.Deadline, end: Int, _ body: (any SecretServiceTransport) throws(DeviceIDError) -> T
    ) throws(DeviceIDError) -> T {
        // Another thread's conversation (an interactive one may wait minutes for a person) holds
        // the lock at most until this call's deadline.
        try lock.withLock(until: end, "the process's Secret Service connection") { () throws(DeviceIDError) -> T in
            let purpose = "a Secret Service conversation"
            try Headroom.requireDescriptors(Headroom.keyringDescriptors, for: purpose)
            try Headroom.requireAddressSpace(threads: Headroom.keyringThreads, for: purpose)
            if gdbusProcess == 0 {
                // GLib's own threads start with its first connection, and it cannot fail them.
                try Headroom.requireThreads(Headroom.keyringThreads, for: purpose)
                // Marked before GLib's first call, not after: a child forked while this thread is
                // anywhere inside GLib (its type system's first classes, its slice allocator) finds
                // GLib's locks held by a thread it does not have, and must not touch GLib at all
                // (measured: 2 children in 320 forked during a first call waited in
                // g_type_class_ref or g_slice_alloc for good when the mark came at the connection).
                gdbusProcess = getpid()
            }
            guard let cancellable = dids_g_cancellable_new() else { throw DeviceIDError(.noMemory) }
            defer { dids_g_object_unref(UnsafeMutableRawPointer(cancellable)) }
            let cancellableAddress = UInt(bitPattern: cancellable)
            let watchdog = Watchdog(milliseconds: UInt32(clamping: max(end - Monotonic.milliseconds(), 1))) {
                dids_g_cancellable_cancel(OpaquePointer(bitPattern: cancellableAddress))
            }
            guard watchdog.isArmed else { throw DeviceIDError(.noMemory, "cannot start the deadline thread") }
            defer { watchdog.finish() }
            do throws(DeviceIDError) {
                let transport = GDBusTransport(connection: try connect(cancellable), cancellable: cancellable,
                                               deadline: deadline)
                return try body(transport)
            } catch {
                // A proxy cancelled half-way through a call is not reused.
                if dids_g_cancellable_is_cancelled(cancellable) != 0 { dropService() }
                throw error
            }
        }
    }

    private static func connect(_ cancellable: OpaquePointer) throws(DeviceIDError) -> OpaquePointer {
        var error: UnsafeMutablePointer<GError>?
        guard var connection = dids_g_bus_get_sync(DIDS_G_BUS_TYPE_SESSION, cancellable, &error) else {
            throw failure(error, "cannot connect to the session bus", .connecting)
        }
        if dids_g_dbus_connection_is_closed(connection) != 0 {
            // GLib hands out its shared connection as long as anyone holds it, closed or not (the
            // bus restarted): DeviceID's holds are let go and a new one asked for.
            dropService()
            if let previous = bus { dids_g_object_unref(UnsafeMutableRawPointer(previous)) }
            bus = nil
            dids_g_object_unref(UnsafeMutableRawPointer(connection))
            guard let fresh = dids_g_bus_get_sync(DIDS_G_BUS_TYPE_SESSION, cancellable, &error) else {
                throw failure(error, "cannot connect to the session bus", .connecting)
            }
            connection = fresh
            guard dids_g_dbus_connection_is_closed(connection) == 0 else {
                dids_g_object_unref(UnsafeMutableRawPointer(connection))
                throw DeviceIDError(.unavailable, "the session bus connection this process shares with GLib is closed "
                    + "(the bus went away), and the application still holds it")
            }
        }
        // GLib's shared bus connection exits the process when the bus closes. Not in ours.
        dids_g_dbus_connection_set_exit_on_close(connection, 0)
        if let previous = bus, previous != connection {
            // The bus was replaced (bus daemon restarted): the service proxy is stale.
            dropService()
            dids_g_object_unref(UnsafeMutableRawPointer(previous))
            bus = connection
        } else if bus == nil {
            bus = connection
        } else {
            dids_g_object_unref(UnsafeMutableRawPointer(connection))
        }
        return connection
    }

    /// Forgets the service proxy and the transfer sessions; the next conversation opens anew.
    private static func dropService() {
        if let service { dids_g_object_unref(UnsafeMutableRawPointer(service)) }
        service = nil
        plainSession = nil
    }

    /// A GError as a DeviceIDError (and frees it), through the Secret Service's one error table:
    /// a remote error by its own D-Bus name, GLib's local conditions by the specification's.
    static func failure(_ error: UnsafeMutablePointer<GError>?, _ context: String,
                        _ phase: SecretService.Phase) -> DeviceIDError {
        guard let error else { return SecretService.error(name: nil, message: "no message", context: context, phase: phase) }
        defer { dids_g_error_free(error) }
        var name: String?
        if dids_g_dbus_error_is_remote_error(error) != 0, let remote = dids_g_dbus_error_get_remote_error(error) {
            name = String(cString: remote)
            dids_g_free(remote)
            dids_g_dbus_error_strip_remote_error(error)
        } else if error.pointee.domain == dids_g_dbus_error_quark(), let encoded = dids_g_dbus_error_encode_gerror(error) {
            name = String(cString: encoded)
            dids_g_free(encoded)
        } else if error.pointee.domain == dids_g_io_error_quark() {
            switch error.pointee.code {
            // Cancelled is the watchdog at the deadline.
            case DIDS_G_IO_ERROR_CANCELLED, DIDS_G_IO_ERROR_TIMED_OUT:
                name = "org.freedesktop.DBus.Error.Timeout"
            // Closed (the bus went away under the process) is not "absent" in a call: the
            // connection is replaced at the next conversation (`connect`).
            default:
                break
            }
        } else if OnDemandLibrary.secret.isLoaded, error.pointee.domain == dids_secret_error_get_quark(),
                  error.pointee.code == DIDS_SECRET_ERROR_IS_LOCKED {
            name = "org.freedesktop.Secret.Error.IsLocked"
        }
        let message = error.pointee.message.map { String(cString: $0) } ?? "no message"
        return SecretService.error(name: name, message: message, context: context, phase: phase)
    }

    // MARK: One conversation

    private let connection: OpaquePointer
    private let cancellable: OpaquePointer
    private let deadline: SecretService.Deadline
    /// How this conversation's secrets cross, once its transfer session is open.
    private var codec: GVariantCoding.SecretCodec?

    private init(connection: OpaquePointer, cancellable: OpaquePointer,
                 deadline: SecretService.Deadline) {
        self.connection = connection
        self.cancellable = cancellable
        self.deadline = deadline
    }

    func call(_ call: MethodCall, timeout: Int32, secretLimit: Int?) throws(DeviceIDError) -> [DBusValue] {
        guard DBusSyntax.isValid(call) else { throw SecretService.malformed("a name or object path to call") }
        // Descriptors travel beside the message, in a list the arguments refer to by index.
        let fds = call.arguments.contains { $0.carriesDescriptor } ? dids_g_unix_fd_list_new() : nil
        defer { if let fds { dids_g_object_unref(UnsafeMutableRawPointer(fds)) } }
        let parameters = try GVariantCoding.tuple(call.arguments, secrets: codec, fds: fds)
        var error: UnsafeMutablePointer<GError>?
        // D-Bus may start (activate) the destination, as libsecret's own calls let it.
        guard let reply = dids_g_dbus_connection_call_with_unix_fd_list_sync(
            connection, call.destination, call.path, call.interface, call.member, parameters, nil,
            GDBusCallFlags(DIDS_G_DBUS_CALL_FLAGS_NONE), timeout, fds, nil, cancellable, &error)
        else { throw Self.failure(error, call.context, .calling) }
        defer { dids_g_variant_unref(reply) }
        var secrets: (codec: GVariantCoding.SecretCodec, limit: Int)?
        if let secretLimit {
            guard let codec else { throw DeviceIDError(.internal, "secrets read without a transfer session") }
            secrets = (codec, secretLimit)
        }
        return try GVariantCoding.values(ofTuple: reply, secrets: secrets)
    }

    func send(_ call: MethodCall) {
        guard DBusSyntax.isValid(call), let parameters = try? GVariantCoding.tuple(call.arguments, secrets: nil) else { return }
        // No callback: sent with NO_REPLY_EXPECTED; no reply is awaited, the deadline has passed.
        dids_g_dbus_connection_call(connection, call.destination, call.path, call.interface, call.member, parameters, nil,
                               GDBusCallFlags(DIDS_G_DBUS_CALL_FLAGS_NO_AUTO_START), -1, nil, nil, nil)
    }

    /// What the signal handler fills in, on this thread's private main context.
    private final class Arrival {
        /// The watched bus name, and once known the unique name owning it: the one sender counted.
        let owner: String
        var sender: String?
        /// The first signal of each sender (before the owner's unique name is known, any may be
        /// it; at most 64 senders, so that a peer cannot push the owner's out by sending many).
        var signals: [(sender: String, arguments: OpaquePointer)] = []
        /// NameOwnerChanged came for the watched name: whoever answers now is not who was asked.
        var ownerChanged = false

        init(owner: String) { self.owner = owner }

        func arrived(_ from: String, _ arguments: OpaquePointer) {
            if let sender, from != sender { return }
            guard signals.count < 64, !signals.contains(where: { $0.sender == from }) else { return }
            signals.append((from, dids_g_variant_ref(arguments)))
        }

        func from(_ sender: String) -> OpaquePointer? { signals.first { $0.sender == sender }?.arguments }

        deinit { for signal in signals { dids_g_variant_unref(signal.arguments) } }
    }

    var uniqueName: String {
        dids_g_dbus_connection_get_unique_name(connection).map { String(cString: $0) } ?? ""
    }

    func awaitSignal(path: String, interface: String, member: String, owner: String, end: Int,
                     gone: DeviceIDError, start: () throws(DeviceIDError) -> Void) throws(DeviceIDError) -> [DBusValue]? {
        guard DBusSyntax.isObjectPath(path), DBusSyntax.isBusName(owner) else { throw SecretService.unwatchable(path) }
        let arrival = Arrival(owner: owner)
        guard let context = dids_g_main_context_new() else { throw DeviceIDError(.noMemory) }
        defer { dids_g_main_context_unref(context) }
        // Subscribed before `start`, so that a signal sent at once is not missed; delivered to this
        // thread's private context only.
        dids_g_main_context_push_thread_default(context)
        defer { dids_g_main_context_pop_thread_default(context) }
        let data = Unmanaged.passUnretained(arrival).toOpaque()
        let subscription = dids_g_dbus_connection_signal_subscribe(
            connection, nil, interface, member, path, nil, GDBusSignalFlags(DIDS_G_DBUS_SIGNAL_FLAGS_NONE),
            { _, sender, _, _, _, parameters, data in
                guard let sender, let parameters else { return }
                Unmanaged<Arrival>.fromOpaque(data!).takeUnretainedValue().arrived(String(cString: sender), parameters)
            }, data, nil)
        let ownership = dids_g_dbus_connection_signal_subscribe(
            connection, "org.freedesktop.DBus", "org.freedesktop.DBus", "NameOwnerChanged", "/org/freedesktop/DBus",
            owner, GDBusSignalFlags(DIDS_G_DBUS_SIGNAL_FLAGS_NONE),
            { _, _, _, _, _, parameters, data in
                let arrival = Unmanaged<Arrival>.fromOpaque(data!).takeUnretainedValue()
                if let parameters, let change = try? GVariantCoding.values(ofTuple: parameters, secrets: nil),
                   SecretService.ownerLeft(change, arrival.owner) {
                    arrival.ownerChanged = true
                }
            }, data, nil)
        defer {
            dids_g_dbus_connection_signal_unsubscribe(connection, subscription)
            dids_g_dbus_connection_signal_unsubscribe(connection, ownership)
            // A signal that arrived after the last wait holds the subscription's reference on the
            // context until it is dispatched (then dropped, unsubscribed): dispatched here.
            while dids_g_main_context_iteration(context, 0) != 0 {}
        }
        try start()
        let sender = try uniqueOwner(of: owner, until: end, gone: gone)
        arrival.sender = sender
        while arrival.from(sender) == nil {
            if arrival.ownerChanged { throw gone }
            let left = end - Monotonic.milliseconds()
            guard left > 0 else { return nil }
            // Wakes the wait at the deadline at the latest.
            let timer = dids_g_timeout_source_new(guint(clamping: left))!
            dids_g_source_set_callback(timer, { _ in DIDS_G_SOURCE_REMOVE }, nil, nil)
            dids_g_source_attach(timer, context)
            dids_g_main_context_iteration(context, 1)
            dids_g_source_destroy(timer)
            dids_g_source_unref(timer)
        }
        return try GVariantCoding.values(ofTuple: arrival.from(sender)!, secrets: nil)
    }

    func transferSession(_ conversation: SecretService.Conversation) throws(DeviceIDError) -> String {
        // Encrypted where asked, unless libsecret is absent: then "plain", as libdbus's.
        var encrypted = conversation.transfer == .encrypted
        if encrypted {
            switch OnDemandLibrary.secret.state() {
            case .loaded: break
            case .absent: encrypted = false
            case .failed(let error): throw error
            }
        }
        guard encrypted else {
            if let session = Self.plainSession {
                codec = .plain(session: session)
                return session
            }
            let reply = try conversation.call(SecretService.Spec.servicePath, SecretService.Spec.service, "OpenSession",
                                              [.string("plain"), .variant(.string(""))], "cannot open a session")
            guard let path = reply[safe: 1]?.objectPath else { throw SecretService.malformed("OpenSession") }
            Self.plainSession = path
            codec = .plain(session: path)
            return path
        }
        let service = try openService()
        var error: UnsafeMutablePointer<GError>?
        if dids_secret_service_ensure_session_sync(service, cancellable, &error) == 0 {
            throw Self.failure(error, "cannot open a session", .calling)
        }
        guard let path = dids_secret_service_get_session_dbus_path(service) else {
            throw SecretService.malformed("OpenSession")
        }
        codec = .libsecret(service)
        return String(cString: path)
    }

    func dropTransferSession() {
        codec = nil
        Self.dropService()
    }

    /// libsecret's service proxy, which holds the transfer session. Not dids_secret_service_get_sync():
    /// its singleton is shared with whatever else in the process uses libsecret. A NULL bus name
    /// honours SECRET_SERVICE_BUS_NAME, checked before (`SessionBus.serviceName`).
    private func openService() throws(DeviceIDError) -> OpaquePointer {
        if let service = Self.service { return service }
        var error: UnsafeMutablePointer<GError>?
        guard let opened = dids_secret_service_open_sync(dids_secret_service_get_type(), nil, SecretServiceFlags(DIDS_SECRET_SERVICE_NONE), cancellable, &error)
        else { throw Self.failure(error, "cannot reach the Secret Service", .opening) }
        dids_g_dbus_proxy_set_default_timeout(opened,
                                         Int32(clamping: deadline.milliseconds))
        Self.service = opened
        return opened
    }
}

extension GDBusTransport {
    /// Its lazily made locks, made before fork() (`LazyGlobals`).
    static func settleLazyGlobals() { _ = lock }
}
