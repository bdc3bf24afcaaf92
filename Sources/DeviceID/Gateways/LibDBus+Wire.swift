import CDeviceIDSupport

/// Writing and reading the D-Bus values the Secret Service exchanges, over libdbus's message
/// iterators (its `dbus_message_append_args` is a C variadic, which Swift cannot call).
enum Wire {
    static let objectPath = type("o")
    static let variant = type("v")
    static let array = type("a")
    static let structure = type("r")
    static let dictEntry = type("e")
    private static let stringType = type("s")
    private static let booleanType = type("b")
    private static let uint64Type = type("t")
    private static let byteType = type("y")

    private static func type(_ code: Unicode.Scalar) -> Int32 { Int32(code.value) }

    // MARK: Writing

    static func append(_ iterator: inout DBusMessageIter, string value: String, type: Int32 = Wire.stringType) {
        value.withCString { text in
            var pointer: UnsafePointer<CChar>? = text
            _ = dids_dbus_message_iter_append_basic(&iterator, type, &pointer)
        }
    }

    static func append(_ iterator: inout DBusMessageIter, bool value: Bool) {
        var flag: dbus_bool_t = value ? 1 : 0
        _ = dids_dbus_message_iter_append_basic(&iterator, booleanType, &flag)
    }

    static func append(_ iterator: inout DBusMessageIter, variantString value: String) {
        container(&iterator, variant, "s") { append(&$0, string: value) }
    }

    /// `ao`
    static func append(_ iterator: inout DBusMessageIter, paths: [String]) {
        container(&iterator, array, "o") { inner in
            for path in paths { append(&inner, string: path, type: objectPath) }
        }
    }

    /// `a{ss}`
    static func append(_ iterator: inout DBusMessageIter, attributes: [(String, String)]) {
        container(&iterator, array, "{ss}") { inner in
            for (key, value) in attributes {
                container(&inner, dictEntry, nil) { entry in
                    append(&entry, string: key)
                    append(&entry, string: value)
                }
            }
        }
    }

    /// The `a{sv}` properties of a new item: its label and attributes.
    static func append(_ iterator: inout DBusMessageIter, itemLabel label: String, attributes: [(String, String)]) {
        container(&iterator, array, "{sv}") { inner in
            container(&inner, dictEntry, nil) { entry in
                append(&entry, string: "org.freedesktop.Secret.Item.Label")
                append(&entry, variantString: label)
            }
            container(&inner, dictEntry, nil) { entry in
                append(&entry, string: "org.freedesktop.Secret.Item.Attributes")
                container(&entry, variant, "a{ss}") { append(&$0, attributes: attributes) }
            }
        }
    }

    /// A secret `(oayays)` in a "plain" session: no parameters, the value as it is.
    static func append(_ iterator: inout DBusMessageIter, secretIn session: String, value: [UInt8], contentType: String) {
        container(&iterator, structure, nil) { inner in
            append(&inner, string: session, type: objectPath)
            append(&inner, bytes: [])
            append(&inner, bytes: value)
            append(&inner, string: contentType)
        }
    }

    /// `ay`
    static func append(_ iterator: inout DBusMessageIter, bytes: [UInt8]) {
        container(&iterator, array, "y") { inner in
            bytes.withUnsafeBufferPointer { buffer in
                var pointer = buffer.baseAddress ?? UnsafePointer(bitPattern: 1)
                _ = dids_dbus_message_iter_append_fixed_array(&inner, byteType, &pointer, Int32(buffer.count))
            }
        }
    }

    private static func container(_ iterator: inout DBusMessageIter, _ type: Int32, _ signature: String?,
                                  _ body: (inout DBusMessageIter) -> Void) {
        var inner = DBusMessageIter()
        if let signature {
            _ = signature.withCString { dids_dbus_message_iter_open_container(&iterator, type, $0, &inner) }
        } else {
            _ = dids_dbus_message_iter_open_container(&iterator, type, nil, &inner)
        }
        body(&inner)
        _ = dids_dbus_message_iter_close_container(&iterator, &inner)
    }

    // MARK: Reading

    /// Steps into the container at `iterator` if it is of `type`.
    static func enter(_ iterator: inout DBusMessageIter, _ inner: inout DBusMessageIter, _ type: Int32) -> Bool {
        guard dids_dbus_message_iter_get_arg_type(&iterator) == type else { return false }
        dids_dbus_message_iter_recurse(&iterator, &inner)
        return true
    }

    /// A string or an object path.
    static func string(_ iterator: inout DBusMessageIter) -> String? {
        let type = dids_dbus_message_iter_get_arg_type(&iterator)
        guard type == stringType || type == objectPath else { return nil }
        var pointer: UnsafePointer<CChar>?
        dids_dbus_message_iter_get_basic(&iterator, &pointer)
        return pointer.map { String(cString: $0) }
    }

    static func bool(_ iterator: inout DBusMessageIter) -> Bool? {
        guard dids_dbus_message_iter_get_arg_type(&iterator) == booleanType else { return nil }
        var value: dbus_bool_t = 0
        dids_dbus_message_iter_get_basic(&iterator, &value)
        return value != 0
    }

    static func uint64(_ iterator: inout DBusMessageIter) -> UInt64? {
        guard dids_dbus_message_iter_get_arg_type(&iterator) == uint64Type else { return nil }
        var value: UInt64 = 0
        dids_dbus_message_iter_get_basic(&iterator, &value)
        return value
    }

    /// `ao`
    static func paths(_ iterator: inout DBusMessageIter) -> [String] {
        var inner = DBusMessageIter()
        guard enter(&iterator, &inner, array) else { return [] }
        var out = [String]()
        while let path = string(&inner) {
            out.append(path)
            dids_dbus_message_iter_next(&inner)
        }
        return out
    }

    /// `ay`, refused with `.tooLarge` past `limit` before anything is copied.
    static func bytes(_ iterator: inout DBusMessageIter, limit: Int) throws(DeviceIDError) -> [UInt8] {
        var inner = DBusMessageIter()
        guard enter(&iterator, &inner, array) else { throw DeviceIDError(.keyring, "a secret was not a byte array") }
        var pointer: UnsafeMutableRawPointer?
        var count: Int32 = 0
        dids_dbus_message_iter_get_fixed_array(&inner, &pointer, &count)
        guard Int(count) <= limit else {
            throw DeviceIDError(.tooLarge, "a stored secret is \(count) bytes; the limit is \(limit)")
        }
        guard let pointer, count > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: Int(count)))
    }

    /// Each entry of a dictionary (`a{…}`) whose key is a string or an object path: `body` gets
    /// the key and an iterator at the entry's value.
    static func forEachEntry(_ iterator: inout DBusMessageIter,
                             _ body: (String, inout DBusMessageIter) throws(DeviceIDError) -> Void) throws(DeviceIDError) {
        var entries = DBusMessageIter()
        guard enter(&iterator, &entries, array) else { return }
        while dids_dbus_message_iter_get_arg_type(&entries) == dictEntry {
            var entry = DBusMessageIter()
            dids_dbus_message_iter_recurse(&entries, &entry)
            if let key = string(&entry) {
                dids_dbus_message_iter_next(&entry)
                try body(key, &entry)
            }
            dids_dbus_message_iter_next(&entries)
        }
    }

    /// `a{ss}`
    static func stringDictionary(_ iterator: inout DBusMessageIter) -> [String: String] {
        var out = [String: String]()
        try? forEachEntry(&iterator) { key, value in
            if let text = string(&value) { out[key] = text }
        }
        return out
    }
}
