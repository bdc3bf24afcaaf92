import CDeviceIDSupport
import CLibSecret
import CDeviceIDLibc

/// The gateway to libsecret and GLib: sessions with the Secret Service, each under one deadline.
///
/// Rules learned on real gnome-keyring, KeePassXC and KWallet (README "Backends"):
/// - the lock state of the default collection is asked first, and a path that could show an
///   unlock dialog is started only in interactive mode, or where the provider says no dialog
///   will appear (`Session.unlockWithoutDialog`): KeePassXC's search on a locked database waits
///   for an unlock dialog, and gnome-keyring's unlock prompt blocks forever with a display;
/// - prompts are run, not refused (KeePassXC confirms every create and delete with a prompt that
///   completes at once) and dismissed at the deadline (`bounded_prompts.c`);
/// - never autolaunch a bus; never let GLib `exit()` the caller's process when the bus goes away;
/// - every session is bounded by a deadline that cancels its GCancellable.
///
/// Sessions are serialized: libsecret keeps process-wide singletons (the service proxy, the bus).
enum LibSecret {
    enum CollectionState: Equatable {
        case unlocked, locked, missing
    }

    /// How long one session may take.
    struct Deadline: Sendable, Equatable {
        /// The bound of each D-Bus call, and of the whole session when not interactive.
        var milliseconds: UInt32
        /// Interactive mode: how long a prompt may wait for the person, who may be shown unlock
        /// and confirmation dialogs. nil: no dialog is ever started.
        var promptMilliseconds: UInt32?

        var interactive: Bool { promptMilliseconds != nil }
        var session: UInt32 { promptMilliseconds ?? milliseconds }
    }

    private static let lock = PThreadMutex()
    // All guarded by `lock`: the session bus connection last seen, and DeviceID's own service
    // proxy on it (bounded prompts), kept between sessions like libsecret's singleton; and the
    // process that first started GLib's D-Bus machinery.
    nonisolated(unsafe) private static var bus: OpaquePointer?
    nonisolated(unsafe) private static var cachedService: UnsafeMutablePointer<SecretService>?
    nonisolated(unsafe) private static var gdbusProcess: pid_t = 0

    /// A forked child inherits the session lock as it was (perhaps held by a thread mid-call in
    /// the parent) and GLib's D-Bus objects, whose worker thread it does not have: the lock is
    /// made free and the objects forgotten (not released: their owner thread is gone).
    private static let forkHandler: Void = ForkedChild.onFork {
        LibSecret.lock.reinitializeInChild()
        LibSecret.bus = nil
        LibSecret.cachedService = nil
    }

    /// GLib runs every D-Bus connection of a process on one worker thread, started once and never
    /// again (gdbusprivate.c), so in a child forked after it started no connection — old or new —
    /// ever gets an answer: measured, a new one times out in its handshake. Such a child talks to
    /// the Secret Service through libdbus instead (`LibDBus`).
    private static func gdbusUnusableHere() -> Bool {
        lock.withLock { gdbusProcess != 0 && gdbusProcess != getpid() }
    }

    /// Why no session bus would be reached without autolaunching one, or nil when one may be.
    static func sessionBusProblem() -> String? {
        if let address = Environment.value("DBUS_SESSION_BUS_ADDRESS") {
            // GLib tries the addresses of the list in order: an autolaunch: entry anywhere would run
            // dbus-launch when the ones before it fail.
            if address.split(separator: ";").contains(where: { $0.hasPrefix("autolaunch:") }) {
                return "DBUS_SESSION_BUS_ADDRESS asks for autolaunch, which DeviceID never does"
            }
            return nil
        }
        if let runtime = Environment.value("XDG_RUNTIME_DIR"), SystemFile.isSocket(runtime + "/bus") { return nil }
        return "no session bus (DBUS_SESSION_BUS_ADDRESS is unset and $XDG_RUNTIME_DIR/bus is absent)"
    }

    /// Runs `body` against the Secret Service with one deadline for all of it.
    static func session<T>(
        _ deadline: Deadline,
        _ body: (any SecretServiceWire) throws(DeviceIDError) -> T
    ) throws(DeviceIDError) -> T {
        if let problem = sessionBusProblem() { throw DeviceIDError.noKeyringHere(problem) }
        _ = forkHandler
        if gdbusUnusableHere() { return try LibDBus.session(deadline, body) }
        return try lock.withLock { () throws(DeviceIDError) -> T in
            try Headroom.requireDescriptors(Headroom.keyringDescriptors, for: "a Secret Service conversation")
            try Headroom.requireAddressSpace(threads: Headroom.keyringThreads, for: "a Secret Service conversation")
            guard let cancellable = g_cancellable_new() else { throw DeviceIDError(.noMemory) }
            defer { g_object_unref(cancellable) }
            let cancellableAddress = UInt(bitPattern: cancellable)
            let watchdog = Watchdog(milliseconds: deadline.session) {
                g_cancellable_cancel(UnsafeMutablePointer<GCancellable>(bitPattern: cancellableAddress))
            }
            guard watchdog.isArmed else { throw DeviceIDError(.noMemory, "cannot start the deadline thread") }
            defer { watchdog.finish() }
            var service: UnsafeMutablePointer<SecretService>?
            var expiredBefore: UInt32 = 0
            var attempt = 0
            while true {
                do throws(DeviceIDError) {
                    let opened = try openService(cancellable, deadline.milliseconds)
                    service = opened
                    expiredBefore = dids_service_expired_prompts(opened)
                    defer { g_object_unref(opened) }
                    let session = Session(service: opened, cancellable: cancellable, deadline: deadline)
                    // Only interactive calls may leave a dialog open at their deadline.
                    if deadline.interactive { dids_service_set_may_dismiss(opened, session.mayDismissPrompts() ? 1 : 0) }
                    return try body(session)
                } catch where attempt == 0 && sessionWasRefused(error) {
                    // KWallet refuses a Diffie-Hellman public key whose leading byte is zero, which
                    // libsecret sends one byte short (secretstorage issue #48): OpenSession fails,
                    // GetSecrets answers without the item, or a later call says "Can't find session"
                    // (measured: about 1 process in 100). All come before any item is changed: a
                    // new session, with a new key, is safe.
                    attempt += 1
                    dropService()
                    continue
                } catch {
                    if let service, dids_service_expired_prompts(service) != expiredBefore {
                        throw LibSecret.promptExpired(deadline)
                    }
                    if g_cancellable_is_cancelled(cancellable) != 0 {
                        // The proxy may be half-way through a call that never finished; start afresh.
                        dropService()
                        throw DeviceIDError(.timedOut, "the Secret Service did not answer within \(deadline.session) ms")
                    }
                    throw error
                }
            }
        }
    }

    private static func sessionWasRefused(_ error: DeviceIDError) -> Bool {
        error.code == .keyring && (error.detail.includes("public key size is invalid")
            || error.detail.includes("Can't find session") || error.detail.includes(Session.secretNotLoaded))
    }

    private static func openService(
        _ cancellable: UnsafeMutablePointer<GCancellable>, _ timeout: UInt32
    ) throws(DeviceIDError) -> UnsafeMutablePointer<SecretService> {
        var error: UnsafeMutablePointer<GError>?
        if gdbusProcess == 0 { gdbusProcess = getpid() }
        guard let connection = g_bus_get_sync(G_BUS_TYPE_SESSION, cancellable, &error) else {
            throw translate(error, "cannot connect to the session bus", unavailable: true, absent: true)
        }
        // GLib's shared bus connection exits the process when the bus closes. Not in ours.
        g_dbus_connection_set_exit_on_close(connection, 0)
        let current = connection
        if let previous = bus, previous != current {
            // The bus was replaced (bus daemon restarted): the cached proxy is stale.
            dropService()
            g_object_unref(UnsafeMutableRawPointer(previous))
            bus = current
        } else if bus == nil {
            bus = current
        } else {
            g_object_unref(UnsafeMutableRawPointer(connection))
        }
        if let cachedService {
            g_object_ref(UnsafeMutableRawPointer(cachedService))
            g_dbus_proxy_set_default_timeout(proxy(cachedService), Int32(clamping: timeout))
            return cachedService
        }
        // Not secret_service_get_sync(): its singleton hands prompts to libsecret's own prompter,
        // which waits forever for a prompt that never completes. Ours is bounded by the deadline.
        // A NULL bus name honours SECRET_SERVICE_BUS_NAME, as the singleton does.
        let raw = secret_service_open_sync(dids_service_get_type(), nil, SECRET_SERVICE_NONE, cancellable, &error)
        guard let service = raw else {
            throw translate(error, "cannot reach the Secret Service", unavailable: true)
        }
        g_dbus_proxy_set_default_timeout(proxy(service), Int32(clamping: timeout))
        g_object_ref(UnsafeMutableRawPointer(service))
        cachedService = service
        return service
    }

    fileprivate static func proxy(_ service: UnsafeMutablePointer<SecretService>) -> UnsafeMutablePointer<GDBusProxy> {
        UnsafeMutableRawPointer(service).assumingMemoryBound(to: GDBusProxy.self)
    }

    /// Forgets the cached proxy (and its secret-transfer session); the next session opens anew.
    private static func dropService() {
        if let cachedService { g_object_unref(UnsafeMutableRawPointer(cachedService)) }
        cachedService = nil
    }

    /// A GError as a DeviceIDError (and frees it). Only GLib's message is kept: it never carries
    /// secret material.
    static func translate(
        _ error: UnsafeMutablePointer<GError>?, _ context: String, unavailable: Bool = false, absent: Bool = false
    ) -> DeviceIDError {
        guard let error else { return DeviceIDError(.keyring, context) }
        defer { g_error_free(error) }
        let message = Redaction.redacted(error.pointee.message.map { String(cString: $0) } ?? "no message")
        let detail = "\(context): \(message)"
        let domain = error.pointee.domain
        let code = error.pointee.code
        if domain == g_io_error_quark() {
            switch code {
            case Int32(G_IO_ERROR_CANCELLED.rawValue), Int32(G_IO_ERROR_TIMED_OUT.rawValue):
                return DeviceIDError(.timedOut, detail)
            default:
                break
            }
        }
        if domain == secret_error_get_quark() && code == Int32(SECRET_ERROR_IS_LOCKED.rawValue) {
            return DeviceIDError(.locked, detail)
        }
        if domain == g_dbus_error_quark() {
            switch code {
            // No bus, or no Secret Service on it: nothing here can hold the ID (docs/STATE.md).
            case Int32(G_DBUS_ERROR_SERVICE_UNKNOWN.rawValue), Int32(G_DBUS_ERROR_NAME_HAS_NO_OWNER.rawValue),
                 Int32(G_DBUS_ERROR_SPAWN_SERVICE_NOT_FOUND.rawValue), Int32(G_DBUS_ERROR_FILE_NOT_FOUND.rawValue),
                 Int32(G_DBUS_ERROR_NO_SERVER.rawValue), Int32(G_DBUS_ERROR_DISCONNECTED.rawValue):
                return DeviceIDError.noKeyringHere(detail)
            // A Secret Service that is installed but failed to start may hold the ID.
            case Int32(G_DBUS_ERROR_SPAWN_EXEC_FAILED.rawValue), Int32(G_DBUS_ERROR_SPAWN_CHILD_EXITED.rawValue),
                 Int32(G_DBUS_ERROR_SPAWN_CHILD_SIGNALED.rawValue), Int32(G_DBUS_ERROR_SPAWN_FAILED.rawValue):
                return DeviceIDError(.unavailable, detail)
            case Int32(G_DBUS_ERROR_TIMEOUT.rawValue), Int32(G_DBUS_ERROR_TIMED_OUT.rawValue),
                 Int32(G_DBUS_ERROR_NO_REPLY.rawValue):
                return DeviceIDError(.timedOut, detail)
            default:
                break
            }
        }
        guard unavailable else { return DeviceIDError(.keyring, detail) }
        return absent ? DeviceIDError.noKeyringHere(detail) : DeviceIDError(.unavailable, detail)
    }

    /// A GHashTable of string attributes, as libsecret's calls take them.
    fileprivate static func attributeTable(_ pairs: [(String, String)]) -> OpaquePointer {
        let table = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free)!
        for (key, value) in pairs { g_hash_table_insert(table, g_strdup(key), g_strdup(value)) }
        return table
    }
}

extension LibSecret {
    /// One bounded conversation with the Secret Service, through libsecret and GLib.
    final class Session: SecretServiceWire {
        fileprivate let service: UnsafeMutablePointer<SecretService>
        fileprivate let cancellable: UnsafeMutablePointer<GCancellable>
        let deadline: Deadline

        init(service: UnsafeMutablePointer<SecretService>, cancellable: UnsafeMutablePointer<GCancellable>,
             deadline: Deadline) {
            self.service = service
            self.cancellable = cancellable
            self.deadline = deadline
        }

        /// An unlocked item whose secret did not come back: not "none", but worth one new session.
        static let secretNotLoaded = "an item's secret could not be loaded"

        var busName: String {
            g_dbus_proxy_get_name(LibSecret.proxy(service)).map { String(cString: $0) } ?? "org.freedesktop.secrets"
        }

        /// One D-Bus method call, bounded by the call deadline and the session's cancellable.
        /// `parameters` is consumed. Returns the reply tuple (a new reference). D-Bus may start
        /// (activate) the destination, as libsecret's own calls let it.
        private func call(_ destination: String, _ path: String, _ interface: String, _ method: String,
                          _ parameters: OpaquePointer?, _ context: String) throws(DeviceIDError) -> OpaquePointer {
            let connection = g_dbus_proxy_get_connection(LibSecret.proxy(service))
            var error: UnsafeMutablePointer<GError>?
            let reply = g_dbus_connection_call_sync(connection, destination, path, interface, method, parameters, nil,
                                                    G_DBUS_CALL_FLAGS_NONE,
                                                    Int32(clamping: deadline.milliseconds), cancellable, &error)
            guard let reply else { throw LibSecret.translate(error, context) }
            return reply
        }

        /// A property of an object of the Secret Service (a new reference, unwrapped from `v`).
        private func property(_ path: String, _ interface: String, _ name: String) throws(DeviceIDError) -> OpaquePointer? {
            let reply = try call(busName, path, SecretServiceNames.properties, "Get",
                                 GVariantValues.strings([interface, name]), "cannot read \(name)")
            defer { g_variant_unref(reply) }
            return GVariantValues.child(reply, 0)
        }

        // MARK: SecretServiceWire

        func readAlias(_ name: String) throws(DeviceIDError) -> String {
            let reply = try call(busName, SecretServiceNames.servicePath, SecretServiceNames.service, "ReadAlias",
                                 GVariantValues.strings([name]), "cannot read the \(name) collection")
            defer { g_variant_unref(reply) }
            let value = GVariantValues.child(reply, 0)
            defer { if let value { g_variant_unref(value) } }
            return GVariantValues.string(value) ?? "/"
        }

        func boolProperty(_ path: String, _ interface: String, _ name: String) throws(DeviceIDError) -> Bool? {
            let value = try property(path, interface, name)
            defer { if let value { g_variant_unref(value) } }
            return GVariantValues.bool(value)
        }

        func stringProperty(_ path: String, _ interface: String, _ name: String) throws(DeviceIDError) -> String? {
            let value = try property(path, interface, name)
            defer { if let value { g_variant_unref(value) } }
            return GVariantValues.string(value)
        }

        func booleanCall(_ destination: String, _ path: String, _ interface: String, _ method: String,
                         _ argument: String) -> Bool? {
            guard let reply = try? call(destination, path, interface, method, GVariantValues.strings([argument]), method)
            else { return nil }
            defer { g_variant_unref(reply) }
            let value = GVariantValues.child(reply, 0)
            defer { if let value { g_variant_unref(value) } }
            return GVariantValues.bool(value)
        }

        func unlock(_ path: String) throws(DeviceIDError) -> Bool {
            var error: UnsafeMutablePointer<GError>?
            var unlocked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
            let count = path.withCString { p in
                var paths: [UnsafePointer<gchar>?] = [p, nil]
                return paths.withUnsafeMutableBufferPointer { buffer in
                    secret_service_unlock_dbus_paths_sync(service, buffer.baseAddress, cancellable, &unlocked, &error)
                }
            }
            g_strfreev(unlocked)
            if count < 0 || error != nil { throw LibSecret.translate(error, "cannot unlock the default collection") }
            return count > 0
        }

        func nameOwner(_ name: String) -> String? {
            guard let reply = try? call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                        "GetNameOwner", GVariantValues.strings([name]), "GetNameOwner")
            else { return nil }
            defer { g_variant_unref(reply) }
            let owner = GVariantValues.child(reply, 0)
            defer { if let owner { g_variant_unref(owner) } }
            return GVariantValues.string(owner)
        }

        // MARK: Items

        /// The object paths of the items carrying these attributes, unlocked and locked.
        /// Never unlocks anything, and builds no proxy per item.
        func searchPaths(_ attributes: [(String, String)]) throws(DeviceIDError) -> (unlocked: [String], locked: [String]) {
            let table = LibSecret.attributeTable(attributes)
            defer { g_hash_table_unref(table) }
            var error: UnsafeMutablePointer<GError>?
            var unlocked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
            var locked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
            let ok = secret_service_search_for_dbus_paths_sync(service, nil, table, cancellable, &unlocked, &locked, &error)
            defer {
                g_strfreev(unlocked)
                g_strfreev(locked)
            }
            guard ok != 0 else { throw LibSecret.translate(error, "search failed") }
            return (strings(unlocked), strings(locked))
        }

        /// The secrets of unlocked items, by path, in the same order. A secret that does not come
        /// back is an error, never "none"; one over `limit` bytes is `.tooLarge` and not copied.
        func secrets(_ paths: [String], limit: Int) throws(DeviceIDError) -> [[UInt8]] {
            var error: UnsafeMutablePointer<GError>?
            let table: OpaquePointer? = withCStrings(paths) { vector in
                secret_service_get_secrets_for_dbus_paths_sync(service, vector, cancellable, &error)
            }
            guard let table else { throw LibSecret.translate(error, "cannot load the secret") }
            defer { g_hash_table_unref(table) }
            var out = [[UInt8]]()
            for path in paths {
                guard let raw = path.withCString({ g_hash_table_lookup(table, $0) }) else {
                    throw DeviceIDError(.keyring, Self.secretNotLoaded)
                }
                var length = 0
                guard let bytes = secret_value_get(OpaquePointer(raw), &length) else {
                    out.append([])
                    continue
                }
                guard length <= limit else {
                    throw DeviceIDError(.tooLarge, "a stored secret is \(length) bytes; the limit is \(limit)")
                }
                out.append(Array(UnsafeRawBufferPointer(start: bytes, count: length)))
            }
            return out
        }

        /// An item's attributes and modification time (one D-Bus message).
        func itemProperties(_ path: String) throws(DeviceIDError) -> (attributes: [String: String], modified: UInt64) {
            let reply = try call(busName, path, SecretServiceNames.properties, "GetAll",
                                 GVariantValues.strings([SecretServiceNames.item]), "cannot read an item")
            defer { g_variant_unref(reply) }
            let all = GVariantValues.child(reply, 0)
            defer { if let all { g_variant_unref(all) } }
            var attributes = [String: String]()
            var modified: UInt64 = 0
            for (name, value) in GVariantValues.dictionary(all) {
                if name == "Attributes" { attributes = GVariantValues.stringDictionary(value) }
                if name == "Modified" { modified = GVariantValues.uint64(value) ?? 0 }
                g_variant_unref(value)
            }
            return (attributes, modified)
        }

        /// Creates an item in the collection at `path`, replacing one with the same attributes;
        /// returns the new item's path. A prompt (KeePassXC asks one for every item) is run.
        func createItem(in collection: String, label: String, attributes: [(String, String)],
                        value: [UInt8]) throws(DeviceIDError) -> String {
            let properties = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                                   { g_variant_unref(OpaquePointer($0)) })!
            defer { g_hash_table_unref(properties) }
            g_hash_table_insert(properties, g_strdup("org.freedesktop.Secret.Item.Label"),
                                UnsafeMutableRawPointer(g_variant_ref_sink(g_variant_new_string(label))))
            g_hash_table_insert(properties, g_strdup("org.freedesktop.Secret.Item.Attributes"),
                                UnsafeMutableRawPointer(g_variant_ref_sink(GVariantValues.attributes(attributes))))
            // text/plain is what secret-tool stores; anything else is declared as bytes. Checked
            // without making a String, which would be one more copy of the secret.
            let isText = !value.contains(0) && UTF8Validation.isValid(value)
            // secret_value_new copies into non-pageable memory. An empty secret still needs a
            // valid pointer, which withUnsafeBytes does not promise: one byte stands in.
            let secret: OpaquePointer = value.isEmpty
                ? secret_value_new("", 0, "text/plain")
                : value.withUnsafeBytes { bytes in
                    secret_value_new(bytes.baseAddress!.assumingMemoryBound(to: CChar.self), bytes.count,
                                     isText ? "text/plain" : "application/octet-stream")
                }
            defer { secret_value_unref(UnsafeMutableRawPointer(secret)) }
            var error: UnsafeMutablePointer<GError>?
            guard let created = secret_service_create_item_dbus_path_sync(
                service, collection, properties, secret, SECRET_ITEM_CREATE_REPLACE, cancellable, &error)
            else { throw LibSecret.translate(error, "cannot store the item") }
            defer { g_free(created) }
            return String(cString: created)
        }

        /// Deletes one item by path. A prompt (KeePassXC confirms deletions) is run.
        func deleteItem(_ path: String) throws(DeviceIDError) {
            var error: UnsafeMutablePointer<GError>?
            if secret_service_delete_item_dbus_path_sync(service, path, cancellable, &error) == 0 {
                throw LibSecret.translate(error, "cannot delete the item")
            }
        }

        private func strings(_ vector: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?) -> [String] {
            guard let vector else { return [] }
            var out = [String]()
            var i = 0
            while let p = vector[i] {
                out.append(String(cString: p))
                i += 1
            }
            return out
        }

        private func withCStrings<R>(_ strings: [String], _ body: (UnsafeMutablePointer<UnsafePointer<gchar>?>) -> R) -> R {
            let copies = strings.map { strdup($0) }
            defer { copies.forEach { free($0) } }
            var vector: [UnsafePointer<gchar>?] = copies.map { UnsafePointer($0) } + [nil]
            return vector.withUnsafeMutableBufferPointer { body($0.baseAddress!) }
        }
    }
}
