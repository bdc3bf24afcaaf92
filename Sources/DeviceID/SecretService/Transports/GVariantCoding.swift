import CDeviceIDLibraries

/// `DBusValue`s to and from GVariants, for `GDBusTransport`. GLib's `g_variant_new`/`g_variant_get`
/// are C variadics, which Swift cannot call; the typed constructors and accessors are used
/// instead. Secrets cross in the conversation's transfer session (`SecretCodec`).
enum GVariantCoding {
    /// How a secret `(oayays)` is written and read: in the "plain" session, the value as it is;
    /// in libsecret's encrypted one (its service proxy holds the session), by libsecret.
    enum SecretCodec {
        case plain(session: String)
        case libsecret(OpaquePointer)
    }

    /// The arguments of a call as one tuple, floating (consumed by the call it is passed to).
    /// `fds`: the call's descriptor list, where each `.unixFD` is appended (duplicated) and sent
    /// as its index; without one, a descriptor cannot be sent.
    static func tuple(_ values: [DBusValue], secrets codec: SecretCodec?,
                      fds: OpaquePointer? = nil) throws(DeviceIDError) -> OpaquePointer {
        var children = [OpaquePointer?]()
        do throws(DeviceIDError) {
            for value in values { children.append(try encode(value, codec, fds)) }
        } catch {
            for child in children { if let child { dids_g_variant_unref(dids_g_variant_ref_sink(child)) } }
            throw error
        }
        return children.withUnsafeMutableBufferPointer { dids_g_variant_new_tuple($0.baseAddress, gsize($0.count)) }
    }

    /// One value, floating.
    private static func encode(_ value: DBusValue, _ codec: SecretCodec?,
                               _ fds: OpaquePointer?) throws(DeviceIDError) -> OpaquePointer {
        switch value {
        case .string(let text):
            return dids_g_variant_new_string(text)
        case .objectPath(let path):
            guard DBusSyntax.isObjectPath(path) else { throw SecretService.malformed("an object path to send") }
            return dids_g_variant_new_object_path(path)
        case .boolean(let flag):
            return dids_g_variant_new_boolean(flag ? 1 : 0)
        case .uint32(let number):
            return dids_g_variant_new_uint32(guint32(number))
        case .uint64(let number):
            return dids_g_variant_new_uint64(guint64(number))
        case .bytes(let bytes):
            return bytes.withUnsafeBytes { raw in
                dids_g_variant_new_fixed_array(type("y"), raw.baseAddress, gsize(raw.count), 1)
            }
        case .array(let element, let items):
            return try build("a" + element, items, codec, fds)
        case .dictionary(let key, let valueSignature, let pairs):
            var entries = [DBusValue]()
            for (k, v) in pairs { entries.append(.structure([k, v])) }
            return try build("a{" + key + valueSignature + "}", entries, codec, fds, entries: true)
        case .structure(let fields):
            return try tuple(fields, secrets: codec, fds: fds)
        case .variant(let inner):
            return dids_g_variant_new_variant(try encode(inner, codec, fds))
        case .unixFD(let descriptor):
            guard let fds else { throw DeviceIDError(.internal, "a descriptor to send without a descriptor list") }
            var error: UnsafeMutablePointer<GError>?
            let index = dids_g_unix_fd_list_append(fds, descriptor, &error)
            guard index >= 0 else {
                let message = error.map { String(cString: $0.pointee.message) } ?? "unknown error"
                dids_g_clear_error(&error)
                throw DeviceIDError(.io, "cannot pass a descriptor over D-Bus: \(message)")
            }
            return dids_g_variant_new_handle(index)
        case .secret(let secret):
            guard let codec else { throw DeviceIDError(.internal, "a secret to send without a transfer session") }
            guard case .libsecret(let service) = codec else {
                // "plain": (session, no parameters, the value, its content type).
                let fields = [dids_g_variant_new_object_path(secret.session),
                              dids_g_variant_new_fixed_array(type("y"), nil, 0, 1),
                              secret.bytes.withUnsafeBytes { raw in
                                  dids_g_variant_new_fixed_array(type("y"), raw.baseAddress, gsize(raw.count), 1)
                              },
                              dids_g_variant_new_string(secret.contentType)]
                return fields.withUnsafeBufferPointer { dids_g_variant_new_tuple($0.baseAddress, gsize($0.count))! }
            }
            // secret_value_new copies into non-pageable memory. An empty secret still needs a
            // valid pointer, which withUnsafeBytes does not promise: "" stands in.
            let plain: OpaquePointer = secret.bytes.isEmpty
                ? dids_secret_value_new("", 0, secret.contentType)
                : secret.bytes.withUnsafeBytes { bytes in
                    dids_secret_value_new(bytes.baseAddress!.assumingMemoryBound(to: CChar.self), bytes.count, secret.contentType)
                }
            defer { dids_secret_value_unref(UnsafeMutableRawPointer(plain)) }
            guard let encoded = dids_secret_service_encode_dbus_secret(service, plain) else {
                throw DeviceIDError(.keyring, "cannot encode the secret in the transfer session")
            }
            return encoded
        case .other(let signature):
            throw DeviceIDError(.internal, "cannot send a value of type \(signature)")
        }
    }

    /// An array (or, with `entries`, a dictionary whose entries are given as pairs).
    private static func build(_ signature: String, _ items: [DBusValue], _ codec: SecretCodec?,
                              _ fds: OpaquePointer?, entries: Bool = false) throws(DeviceIDError) -> OpaquePointer {
        let builder = signature.withCString { dids_g_variant_builder_new(OpaquePointer($0)) }
        defer { dids_g_variant_builder_unref(builder) }
        for item in items {
            if entries, case .structure(let pair) = item {
                let key = try encode(pair[0], codec, fds)
                let value: OpaquePointer
                do throws(DeviceIDError) {
                    value = try encode(pair[1], codec, fds)
                } catch {
                    dids_g_variant_unref(dids_g_variant_ref_sink(key))
                    throw error
                }
                dids_g_variant_builder_add_value(builder, dids_g_variant_new_dict_entry(key, value))
            } else {
                dids_g_variant_builder_add_value(builder, try encode(item, codec, fds))
            }
        }
        return dids_g_variant_builder_end(builder)
    }

    /// The children of a reply tuple. With `secrets`, each `(oayays)` is decoded in the transfer
    /// session into `.secret`, refused with `.tooLarge` past the limit.
    static func values(ofTuple tuple: OpaquePointer,
                       secrets: (codec: SecretCodec, limit: Int)?) throws(DeviceIDError) -> [DBusValue] {
        guard dids_g_variant_is_container(tuple) != 0 else { return [] }
        var out = [DBusValue]()
        for index in 0..<dids_g_variant_n_children(tuple) {
            let child = dids_g_variant_get_child_value(tuple, index)!
            defer { dids_g_variant_unref(child) }
            out.append(try decode(child, secrets))
        }
        return out
    }

    private static func decode(_ value: OpaquePointer,
                               _ secrets: (codec: SecretCodec, limit: Int)?) throws(DeviceIDError) -> DBusValue {
        let signature = String(cString: dids_g_variant_get_type_string(value))
        switch signature {
        case "s": return .string(String(cString: dids_g_variant_get_string(value, nil)))
        case "o": return .objectPath(String(cString: dids_g_variant_get_string(value, nil)))
        case "b": return .boolean(dids_g_variant_get_boolean(value) != 0)
        case "u": return .uint32(UInt32(dids_g_variant_get_uint32(value)))
        case "t": return .uint64(UInt64(dids_g_variant_get_uint64(value)))
        case "ay":
            var count: gsize = 0
            guard let bytes = dids_g_variant_get_fixed_array(value, &count, 1), count > 0 else { return .bytes([]) }
            return .bytes(Array(UnsafeRawBufferPointer(start: bytes, count: Int(count))))
        case "v":
            let inner = dids_g_variant_get_variant(value)!
            defer { dids_g_variant_unref(inner) }
            return .variant(try decode(inner, secrets))
        case TransferredSecret.signature where secrets != nil:
            return .secret(try secret(value, secrets!.codec, limit: secrets!.limit))
        default:
            break
        }
        if signature.hasPrefix("a{") {
            let inner = Array(signature.utf8.dropFirst(2).dropLast())
            let keySignature = String(decoding: inner.prefix(1), as: UTF8.self)
            let valueSignature = String(decoding: inner.dropFirst(), as: UTF8.self)
            var pairs = [(DBusValue, DBusValue)]()
            for index in 0..<dids_g_variant_n_children(value) {
                let entry = dids_g_variant_get_child_value(value, index)!
                defer { dids_g_variant_unref(entry) }
                let key = dids_g_variant_get_child_value(entry, 0)!
                defer { dids_g_variant_unref(key) }
                let item = dids_g_variant_get_child_value(entry, 1)!
                defer { dids_g_variant_unref(item) }
                pairs.append((try decode(key, secrets), try decode(item, secrets)))
            }
            return .dictionary(key: keySignature, value: valueSignature, pairs)
        }
        if signature.hasPrefix("a") || signature.hasPrefix("(") {
            var items = [DBusValue]()
            for index in 0..<dids_g_variant_n_children(value) {
                let item = dids_g_variant_get_child_value(value, index)!
                defer { dids_g_variant_unref(item) }
                items.append(try decode(item, secrets))
            }
            return signature.hasPrefix("a") ? .array(element: String(signature.dropFirst()), items) : .structure(items)
        }
        return .other(signature: signature)
    }

    /// A secret as it is ("plain"), or decrypted by libsecret in the service's transfer session.
    private static func secret(_ value: OpaquePointer, _ codec: SecretCodec,
                               limit: Int) throws(DeviceIDError) -> TransferredSecret {
        let session = dids_g_variant_get_child_value(value, 0)!
        defer { dids_g_variant_unref(session) }
        let sessionPath = String(cString: dids_g_variant_get_string(session, nil))
        guard case .libsecret(let service) = codec else {
            // Only this conversation's own session: a value for another was not sent in the clear
            // for us (libsecret checks the same of its session).
            guard case .plain(let expected) = codec, sessionPath == expected else {
                throw DeviceIDError(.keyring, SecretService.secretNotLoaded)
            }
            let field = dids_g_variant_get_child_value(value, 2)!
            defer { dids_g_variant_unref(field) }
            let type = dids_g_variant_get_child_value(value, 3)!
            defer { dids_g_variant_unref(type) }
            let contentType = String(cString: dids_g_variant_get_string(type, nil))
            var count: gsize = 0
            guard let bytes = dids_g_variant_get_fixed_array(field, &count, 1), count > 0 else {
                return TransferredSecret(session: sessionPath, bytes: [], contentType: contentType)
            }
            guard Int(count) <= limit else {
                throw DeviceIDError(.tooLarge, "a stored secret is \(count) bytes; the limit is \(limit)")
            }
            return TransferredSecret(session: sessionPath, bytes: Array(UnsafeRawBufferPointer(start: bytes, count: Int(count))),
                                     contentType: contentType)
        }
        guard let plain = dids_secret_service_decode_dbus_secret(service, value) else {
            throw DeviceIDError(.keyring, SecretService.secretNotLoaded)
        }
        defer { dids_secret_value_unref(UnsafeMutableRawPointer(plain)) }
        let contentType = dids_secret_value_get_content_type(plain).map { String(cString: $0) } ?? "text/plain"
        var length = 0
        guard let bytes = dids_secret_value_get(plain, &length), length > 0 else {
            return TransferredSecret(session: sessionPath, bytes: [], contentType: contentType)
        }
        guard length <= limit else {
            throw DeviceIDError(.tooLarge, "a stored secret is \(length) bytes; the limit is \(limit)")
        }
        return TransferredSecret(session: sessionPath, bytes: Array(UnsafeRawBufferPointer(start: bytes, count: length)),
                                 contentType: contentType)
    }

    /// A GVariantType is its type string; a static one needs no allocation.
    private static func type(_ text: StaticString) -> OpaquePointer {
        OpaquePointer(text.utf8Start)
    }
}
