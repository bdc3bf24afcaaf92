import CDeviceIDSupport
import CLibSecret
import Glibc

/// The only file that calls libsecret and GLib.
///
/// Rules learned on real gnome-keyring (see shared/FACTS.md and README "Backends"):
/// - never pass an unlock or prompt flag: with a display an unlock prompt blocks forever, and
///   cancelling it hangs;
/// - a locked collection makes lookups return nothing and no error, so the caller asks the
///   default collection whether it is locked before believing "not found";
/// - never autolaunch a bus; never let GLib `exit()` the caller's process when the bus goes away;
/// - every session is bounded by a deadline that cancels its GCancellable.
///
/// Sessions are serialized: libsecret keeps process-wide singletons (the service proxy, the bus).
enum LibSecret {
    struct Item {
        var secret: [UInt8]?
        var locked: Bool
        var created: UInt64
        var modified: UInt64
    }

    enum CollectionState: Equatable {
        case unlocked, locked, missing
    }

    private static let lock = PThreadMutex()
    // Both guarded by `lock`: the session bus connection last seen, and DeviceID's own
    // (non-prompting) service proxy on it, kept between sessions like libsecret's singleton.
    nonisolated(unsafe) private static var bus: OpaquePointer?
    nonisolated(unsafe) private static var cachedService: UnsafeMutablePointer<SecretService>?

    /// Why no session bus would be reached without autolaunching one, or nil when one may be.
    static func sessionBusProblem() -> String? {
        if let address = Environment.value("DBUS_SESSION_BUS_ADDRESS") {
            if address.hasPrefix("autolaunch:") {
                return "DBUS_SESSION_BUS_ADDRESS asks for autolaunch, which DeviceID never does"
            }
            return nil
        }
        if let runtime = Environment.value("XDG_RUNTIME_DIR") {
            var st = stat()
            if stat(runtime + "/bus", &st) == 0 && st.st_mode & S_IFMT == S_IFSOCK { return nil }
        }
        return "no session bus (DBUS_SESSION_BUS_ADDRESS is unset and $XDG_RUNTIME_DIR/bus is absent)"
    }

    /// Runs `body` against the Secret Service with one deadline for all of it.
    static func session<T>(
        timeoutMilliseconds: UInt32,
        _ body: (Session) throws(DeviceIDError) -> T
    ) throws(DeviceIDError) -> T {
        if let problem = sessionBusProblem() { throw DeviceIDError(.unavailable, problem) }
        return try lock.withLock { () throws(DeviceIDError) -> T in
            guard let cancellable = g_cancellable_new() else { throw DeviceIDError(.noMemory) }
            defer { g_object_unref(cancellable) }
            let cancellableAddress = UInt(bitPattern: cancellable)
            let watchdog = Watchdog(milliseconds: timeoutMilliseconds) {
                g_cancellable_cancel(UnsafeMutablePointer<GCancellable>(bitPattern: cancellableAddress))
            }
            guard watchdog.isArmed else { throw DeviceIDError(.noMemory, "cannot start the deadline thread") }
            defer { watchdog.finish() }
            do throws(DeviceIDError) {
                let service = try openService(cancellable, timeoutMilliseconds)
                defer { g_object_unref(service) }
                return try body(Session(service: service, cancellable: cancellable))
            } catch {
                if g_cancellable_is_cancelled(cancellable) != 0 {
                    // The proxy may be half-way through a call that never finished; start afresh.
                    dropService()
                    throw DeviceIDError(.timedOut, "the Secret Service did not answer within \(timeoutMilliseconds) ms")
                }
                throw error
            }
        }
    }

    private static func openService(
        _ cancellable: UnsafeMutablePointer<GCancellable>, _ timeout: UInt32
    ) throws(DeviceIDError) -> UnsafeMutablePointer<SecretService> {
        var error: UnsafeMutablePointer<GError>?
        guard let connection = g_bus_get_sync(G_BUS_TYPE_SESSION, cancellable, &error) else {
            throw translate(error, "cannot connect to the session bus", unavailable: true)
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
            return cachedService
        }
        // Not secret_service_get_sync(): its singleton hands prompts to libsecret's own prompter,
        // which waits forever for a prompt that never completes. Ours refuses every prompt.
        // A NULL bus name honours SECRET_SERVICE_BUS_NAME, as the singleton does.
        let raw = secret_service_open_sync(dids_non_prompting_service_get_type(), nil, SECRET_SERVICE_NONE,
                                           cancellable, &error)
        guard let service = raw else {
            throw translate(error, "cannot reach the Secret Service", unavailable: true)
        }
        g_dbus_proxy_set_default_timeout(UnsafeMutableRawPointer(service).assumingMemoryBound(to: GDBusProxy.self),
                                         Int32(clamping: timeout))
        g_object_ref(UnsafeMutableRawPointer(service))
        cachedService = service
        return service
    }

    /// Forgets the cached proxy (and its secret-transfer session); the next session opens anew.
    private static func dropService() {
        if let cachedService { g_object_unref(UnsafeMutableRawPointer(cachedService)) }
        cachedService = nil
    }

    /// One bounded conversation with the Secret Service.
    struct Session {
        fileprivate let service: UnsafeMutablePointer<SecretService>
        fileprivate let cancellable: UnsafeMutablePointer<GCancellable>

        /// Every item carrying `service` and `username` attributes, locked ones included, with the
        /// secrets of unlocked ones. Never unlocks anything.
        func search(service name: String, account: String) throws(DeviceIDError) -> [Item] {
            let attributes = LibSecret.attributes(service: name, account: account)
            defer { g_hash_table_unref(attributes) }
            var error: UnsafeMutablePointer<GError>?
            let flags = SecretSearchFlags(rawValue: SECRET_SEARCH_ALL.rawValue | SECRET_SEARCH_LOAD_SECRETS.rawValue)
            let list = secret_service_search_sync(service, nil, attributes, flags, cancellable, &error)
            if let error { throw translate(error, "search failed") }
            defer { g_list_free_full(list, g_object_unref) }
            var items = [Item]()
            var node = list
            while let current = node {
                if let raw = current.pointee.data {
                    let item = raw.assumingMemoryBound(to: SecretItem.self)
                    var secret: [UInt8]?
                    let locked = secret_item_get_locked(item) != 0
                    if !locked {
                        // An unlocked item whose secret did not load (GetSecrets failed) is not
                        // "none": believing so would mint a new ID over an existing one.
                        guard let value = secret_item_get_secret(item) else {
                            throw DeviceIDError(.keyring, "an item's secret could not be loaded")
                        }
                        var length = 0
                        if let bytes = secret_value_get(value, &length) {
                            secret = Array(UnsafeRawBufferPointer(start: bytes, count: length))
                        } else {
                            secret = []
                        }
                        secret_value_unref(UnsafeMutableRawPointer(value))
                    }
                    items.append(Item(secret: secret, locked: locked,
                                      created: UInt64(secret_item_get_created(item)),
                                      modified: UInt64(secret_item_get_modified(item))))
                }
                node = current.pointee.next
            }
            return items
        }

        /// The object paths of the items carrying `service` and `username`, unlocked and locked.
        /// Never unlocks anything, and builds no proxy per item.
        func searchPaths(service name: String, account: String) throws(DeviceIDError) -> (unlocked: [String], locked: [String]) {
            let attributes = LibSecret.attributes(service: name, account: account)
            defer { g_hash_table_unref(attributes) }
            var error: UnsafeMutablePointer<GError>?
            var unlocked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
            var locked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
            let ok = secret_service_search_for_dbus_paths_sync(service, nil, attributes, cancellable,
                                                               &unlocked, &locked, &error)
            defer {
                g_strfreev(unlocked)
                g_strfreev(locked)
            }
            guard ok != 0 else { throw translate(error, "search failed") }
            return (strings(unlocked), strings(locked))
        }

        /// The secret of one unlocked item, by path. A secret that does not come back is an
        /// error, never "none".
        func secret(path: String) throws(DeviceIDError) -> [UInt8] {
            var error: UnsafeMutablePointer<GError>?
            let table: OpaquePointer? = path.withCString { p in
                var paths: [UnsafePointer<gchar>?] = [p, nil]
                return paths.withUnsafeMutableBufferPointer { buffer in
                    secret_service_get_secrets_for_dbus_paths_sync(service, buffer.baseAddress, cancellable, &error)
                }
            }
            guard let table else { throw translate(error, "cannot load the secret") }
            defer { g_hash_table_unref(table) }
            guard let raw = path.withCString({ g_hash_table_lookup(table, $0) }) else {
                throw DeviceIDError(.keyring, "an item's secret could not be loaded")
            }
            let value = OpaquePointer(raw)
            var length = 0
            guard let bytes = secret_value_get(value, &length) else { return [] }
            return Array(UnsafeRawBufferPointer(start: bytes, count: length))
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

        /// Whether the default collection (where DeviceID stores) exists and is unlocked.
        /// Never prompts: ≈ 10 ms on a fresh connection here.
        func defaultCollectionState() throws(DeviceIDError) -> CollectionState {
            try withDefaultCollection { collection throws(DeviceIDError) in
                guard let collection else { return .missing }
                return secret_collection_get_locked(collection) != 0 ? .locked : .unlocked
            }
        }

        /// Stores `value` in the default collection, replacing the item with the same attributes.
        func store(service name: String, account: String, label: String, value: [UInt8]) throws(DeviceIDError) {
            try withDefaultCollection { collection throws(DeviceIDError) in
                guard let collection else {
                    throw DeviceIDError(.unavailable, "the Secret Service has no default collection")
                }
                guard secret_collection_get_locked(collection) == 0 else {
                    throw DeviceIDError(.locked, "the default collection is locked")
                }
                let attributes = LibSecret.attributes(service: name, account: account)
                defer { g_hash_table_unref(attributes) }
                // text/plain is what secret-tool stores; anything else is declared as bytes.
                let isText = !value.contains(0) && String(validating: value, as: UTF8.self) != nil
                // secret_value_new copies into non-pageable memory; a NUL is appended so that even an
                // empty secret has a valid pointer.
                let secret = (value + [0]).withUnsafeBytes { bytes in
                    secret_value_new(bytes.baseAddress!.assumingMemoryBound(to: CChar.self),
                                     bytes.count - 1, isText ? "text/plain" : "application/octet-stream")
                }
                defer { secret_value_unref(UnsafeMutableRawPointer(secret)) }
                var error: UnsafeMutablePointer<GError>?
                let item = secret_item_create_sync(collection, nil, attributes, label, secret,
                                                   SECRET_ITEM_CREATE_REPLACE, cancellable, &error)
                if let item { g_object_unref(item) }
                if let error { throw translate(error, "cannot store the item") }
            }
        }

        /// Deletes every unlocked item with these attributes; returns how many.
        /// Throws `.locked`, deleting nothing, when a matching item is locked.
        func delete(service name: String, account: String) throws(DeviceIDError) -> Int {
            let attributes = LibSecret.attributes(service: name, account: account)
            defer { g_hash_table_unref(attributes) }
            var error: UnsafeMutablePointer<GError>?
            let flags = SecretSearchFlags(rawValue: SECRET_SEARCH_ALL.rawValue)
            let list = secret_service_search_sync(service, nil, attributes, flags, cancellable, &error)
            if let error { throw translate(error, "search failed") }
            defer { g_list_free_full(list, g_object_unref) }
            var items = [UnsafeMutablePointer<SecretItem>]()
            var node = list
            while let current = node {
                if let raw = current.pointee.data { items.append(raw.assumingMemoryBound(to: SecretItem.self)) }
                node = current.pointee.next
            }
            if items.contains(where: { secret_item_get_locked($0) != 0 }) {
                throw DeviceIDError(.locked, "a matching item is locked")
            }
            for item in items {
                if secret_item_delete_sync(item, cancellable, &error) == 0 {
                    throw translate(error, "cannot delete the item")
                }
            }
            return items.count
        }

        private func withDefaultCollection<T>(
            _ body: (UnsafeMutablePointer<SecretCollection>?) throws(DeviceIDError) -> T
        ) throws(DeviceIDError) -> T {
            var error: UnsafeMutablePointer<GError>?
            let collection = secret_collection_for_alias_sync(service, "default", SECRET_COLLECTION_NONE,
                                                              cancellable, &error)
            if let error { throw translate(error, "cannot read the default collection") }
            defer { if let collection { g_object_unref(collection) } }
            return try body(collection)
        }
    }

    private static func attributes(service: String, account: String) -> OpaquePointer {
        let table = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free)!
        g_hash_table_insert(table, g_strdup("service"), g_strdup(service))
        g_hash_table_insert(table, g_strdup("username"), g_strdup(account))
        return table
    }

    /// A GError as a DeviceIDError (and frees it). Only GLib's message is kept: it never carries
    /// secret material.
    private static func translate(
        _ error: UnsafeMutablePointer<GError>?, _ context: String, unavailable: Bool = false
    ) -> DeviceIDError {
        guard let error else { return DeviceIDError(.keyring, context) }
        defer { g_error_free(error) }
        let message = error.pointee.message.map { String(cString: $0) } ?? "no message"
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
            case Int32(G_DBUS_ERROR_SERVICE_UNKNOWN.rawValue), Int32(G_DBUS_ERROR_NAME_HAS_NO_OWNER.rawValue),
                 Int32(G_DBUS_ERROR_SPAWN_SERVICE_NOT_FOUND.rawValue), Int32(G_DBUS_ERROR_FILE_NOT_FOUND.rawValue),
                 Int32(G_DBUS_ERROR_NO_SERVER.rawValue), Int32(G_DBUS_ERROR_DISCONNECTED.rawValue),
                 Int32(G_DBUS_ERROR_SPAWN_EXEC_FAILED.rawValue), Int32(G_DBUS_ERROR_SPAWN_CHILD_EXITED.rawValue):
                return DeviceIDError(.unavailable, detail)
            case Int32(G_DBUS_ERROR_TIMEOUT.rawValue), Int32(G_DBUS_ERROR_TIMED_OUT.rawValue),
                 Int32(G_DBUS_ERROR_NO_REPLY.rawValue):
                return DeviceIDError(.timedOut, detail)
            default:
                break
            }
        }
        return DeviceIDError(unavailable ? .unavailable : .keyring, detail)
    }
}
