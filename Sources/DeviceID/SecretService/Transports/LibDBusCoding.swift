import CDeviceIDLibraries

/// `DBusValue`s to and from libdbus messages, for `LibDBusTransport`, over libdbus's iterators
/// (its `dbus_message_append_args` is a C variadic, which Swift cannot call). libdbus aborts the
/// process on a value it finds invalid: every object path is checked (`DBusSyntax`) before it is
/// appended, and every value is read only after its type is.
enum LibDBusCoding {
    private static func code(_ scalar: Unicode.Scalar) -> Int32 { Int32(scalar.value) }
    private static let stringType = code("s"), objectPathType = code("o"), booleanType = code("b")
    private static let uint32Type = code("u"), uint64Type = code("t"), byteType = code("y"), arrayType = code("a")
    private static let variantType = code("v"), structType = code("r"), dictEntryType = code("e")
    private static let unixFDType = code("h")

    // MARK: Writing

    /// Appends `values` to a message being built at `iterator`.
    static func append(_ values: [DBusValue], to iterator: inout DBusMessageIter) throws(DeviceIDError) {
        for value in values { try append(value, &iterator) }
    }

    private static func append(_ value: DBusValue, _ iterator: inout DBusMessageIter) throws(DeviceIDError) {
        switch value {
        case .string(let text):
            try basic(&iterator, stringType, text)
        case .objectPath(let path):
            guard DBusSyntax.isObjectPath(path) else { throw SecretService.malformed("an object path to send") }
            try basic(&iterator, objectPathType, path)
        case .boolean(let flag):
            var raw: dbus_bool_t = flag ? 1 : 0
            try check(dids_dbus_message_iter_append_basic(&iterator, booleanType, &raw))
        case .uint32(let number):
            var raw = number
            try check(dids_dbus_message_iter_append_basic(&iterator, uint32Type, &raw))
        case .uint64(let number):
            var raw = number
            try check(dids_dbus_message_iter_append_basic(&iterator, uint64Type, &raw))
        case .bytes(let bytes):
            try bytesValue(&iterator, bytes)
        case .array(let element, let items):
            try container(&iterator, arrayType, element) { (inner) throws(DeviceIDError) in
                for item in items { try append(item, &inner) }
            }
        case .dictionary(let key, let valueSignature, let pairs):
            try container(&iterator, arrayType, "{" + key + valueSignature + "}") { (inner) throws(DeviceIDError) in
                for (k, v) in pairs {
                    try container(&inner, dictEntryType, nil) { (entry) throws(DeviceIDError) in
                        try append(k, &entry)
                        try append(v, &entry)
                    }
                }
            }
        case .structure(let fields):
            try container(&iterator, structType, nil) { (inner) throws(DeviceIDError) in
                for field in fields { try append(field, &inner) }
            }
        case .variant(let inner):
            try container(&iterator, variantType, inner.signature) { (content) throws(DeviceIDError) in
                try append(inner, &content)
            }
        case .unixFD(let descriptor):
            // libdbus duplicates the descriptor; a connection that did not negotiate descriptor
            // passing refuses the message when it is sent.
            var raw = descriptor
            try check(dids_dbus_message_iter_append_basic(&iterator, unixFDType, &raw))
        case .secret(let secret):
            // The "plain" transfer session: no parameters, the value as it is.
            guard DBusSyntax.isObjectPath(secret.session) else { throw SecretService.malformed("a session path to send") }
            try container(&iterator, structType, nil) { (inner) throws(DeviceIDError) in
                try basic(&inner, objectPathType, secret.session)
                try bytesValue(&inner, [])
                try bytesValue(&inner, secret.bytes)
                try basic(&inner, stringType, secret.contentType)
            }
        case .other(let signature):
            throw DeviceIDError(.internal, "cannot send a value of type \(signature)")
        }
    }

    private static func basic(_ iterator: inout DBusMessageIter, _ type: Int32, _ text: String) throws(DeviceIDError) {
        let appended = text.withCString { pointer in
            var value: UnsafePointer<CChar>? = pointer
            return dids_dbus_message_iter_append_basic(&iterator, type, &value)
        }
        try check(appended)
    }

    /// `ay`
    private static func bytesValue(_ iterator: inout DBusMessageIter, _ bytes: [UInt8]) throws(DeviceIDError) {
        try container(&iterator, arrayType, "y") { (inner) throws(DeviceIDError) in
            let appended = bytes.withUnsafeBufferPointer { buffer in
                var pointer = buffer.baseAddress ?? UnsafePointer(bitPattern: 1)
                return dids_dbus_message_iter_append_fixed_array(&inner, byteType, &pointer, Int32(buffer.count))
            }
            try check(appended)
        }
    }

    private static func container(_ iterator: inout DBusMessageIter, _ type: Int32, _ signature: String?,
                                  _ body: (inout DBusMessageIter) throws(DeviceIDError) -> Void) throws(DeviceIDError) {
        var inner = DBusMessageIter()
        let opened = signature.map { text in text.withCString { dids_dbus_message_iter_open_container(&iterator, type, $0, &inner) } }
            ?? dids_dbus_message_iter_open_container(&iterator, type, nil, &inner)
        try check(opened)
        do throws(DeviceIDError) {
            try body(&inner)
        } catch {
            dids_dbus_message_iter_abandon_container(&iterator, &inner)
            throw error
        }
        try check(dids_dbus_message_iter_close_container(&iterator, &inner))
    }

    /// libdbus's appends fail only when memory runs out.
    private static func check(_ result: dbus_bool_t) throws(DeviceIDError) {
        if result == 0 { throw DeviceIDError(.noMemory, "libdbus could not build a message") }
    }

    // MARK: Reading

    /// The arguments of a received message. With `secretLimit`, each `(oayays)` is a "plain"
    /// secret, refused with `.tooLarge` past the limit before it is copied.
    static func arguments(of message: OpaquePointer, secretLimit: Int?) throws(DeviceIDError) -> [DBusValue] {
        var iterator = DBusMessageIter()
        guard dids_dbus_message_iter_init(message, &iterator) != 0 else { return [] }
        return try readAll(&iterator, secretLimit)
    }

    /// Every value at `iterator`'s level, from where it stands.
    private static func readAll(_ iterator: inout DBusMessageIter, _ secretLimit: Int?) throws(DeviceIDError) -> [DBusValue] {
        var out = [DBusValue]()
        while dids_dbus_message_iter_get_arg_type(&iterator) != 0 {
            out.append(try read(&iterator, secretLimit))
            dids_dbus_message_iter_next(&iterator)
        }
        return out
    }

    private static func read(_ iterator: inout DBusMessageIter, _ secretLimit: Int?) throws(DeviceIDError) -> DBusValue {
        let type = dids_dbus_message_iter_get_arg_type(&iterator)
        switch type {
        case stringType, objectPathType:
            var pointer: UnsafePointer<CChar>?
            dids_dbus_message_iter_get_basic(&iterator, &pointer)
            let text = pointer.map { String(cString: $0) } ?? ""
            return type == stringType ? .string(text) : .objectPath(text)
        case booleanType:
            var raw: dbus_bool_t = 0
            dids_dbus_message_iter_get_basic(&iterator, &raw)
            return .boolean(raw != 0)
        case uint32Type:
            var raw: UInt32 = 0
            dids_dbus_message_iter_get_basic(&iterator, &raw)
            return .uint32(raw)
        case uint64Type:
            var raw: UInt64 = 0
            dids_dbus_message_iter_get_basic(&iterator, &raw)
            return .uint64(raw)
        case variantType:
            var inner = DBusMessageIter()
            dids_dbus_message_iter_recurse(&iterator, &inner)
            return .variant(try read(&inner, secretLimit))
        default:
            break
        }
        let signature = signatureAt(&iterator)
        var inner = DBusMessageIter()
        switch type {
        case arrayType where signature == "ay":
            return .bytes(try fixedBytes(&iterator, limit: Int.max))
        case arrayType where signature.hasPrefix("a{"):
            let body = Array(signature.utf8.dropFirst(2).dropLast())
            dids_dbus_message_iter_recurse(&iterator, &inner)
            var pairs = [(DBusValue, DBusValue)]()
            while dids_dbus_message_iter_get_arg_type(&inner) == dictEntryType {
                var entry = DBusMessageIter()
                dids_dbus_message_iter_recurse(&inner, &entry)
                let key = try read(&entry, secretLimit)
                dids_dbus_message_iter_next(&entry)
                pairs.append((key, try read(&entry, secretLimit)))
                dids_dbus_message_iter_next(&inner)
            }
            return .dictionary(key: String(decoding: body.prefix(1), as: UTF8.self),
                               value: String(decoding: body.dropFirst(), as: UTF8.self), pairs)
        case arrayType:
            dids_dbus_message_iter_recurse(&iterator, &inner)
            return .array(element: String(signature.dropFirst()), try readAll(&inner, secretLimit))
        case structType where secretLimit != nil && signature == TransferredSecret.signature:
            return .secret(try plainSecret(&iterator, limit: secretLimit!))
        case structType:
            dids_dbus_message_iter_recurse(&iterator, &inner)
            return .structure(try readAll(&inner, secretLimit))
        default:
            return .other(signature: signature)
        }
    }

    /// A secret `(oayays)` of the "plain" session: the value is the secret as it is.
    private static func plainSecret(_ iterator: inout DBusMessageIter, limit: Int) throws(DeviceIDError) -> TransferredSecret {
        var fields = DBusMessageIter()
        dids_dbus_message_iter_recurse(&iterator, &fields)
        guard case .objectPath(let session) = try read(&fields, nil) else { throw SecretService.malformed("a secret") }
        dids_dbus_message_iter_next(&fields)  // parameters: none in "plain"
        dids_dbus_message_iter_next(&fields)
        let bytes = try fixedBytes(&fields, limit: limit)
        dids_dbus_message_iter_next(&fields)
        let contentType = (try read(&fields, nil)).string ?? "text/plain"
        return TransferredSecret(session: session, bytes: bytes, contentType: contentType)
    }

    /// The `ay` at `iterator`, refused with `.tooLarge` past `limit` before anything is copied.
    private static func fixedBytes(_ iterator: inout DBusMessageIter, limit: Int) throws(DeviceIDError) -> [UInt8] {
        var inner = DBusMessageIter()
        dids_dbus_message_iter_recurse(&iterator, &inner)
        var pointer: UnsafeMutableRawPointer?
        var count: Int32 = 0
        dids_dbus_message_iter_get_fixed_array(&inner, &pointer, &count)
        guard Int(count) <= limit else {
            throw DeviceIDError(.tooLarge, "a stored secret is \(count) bytes; the limit is \(limit)")
        }
        guard let pointer, count > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: Int(count)))
    }

    /// The full signature of the value at `iterator`.
    private static func signatureAt(_ iterator: inout DBusMessageIter) -> String {
        guard let raw = dids_dbus_message_iter_get_signature(&iterator) else { return "" }
        defer { dids_dbus_free(raw) }
        return String(cString: raw)
    }
}
