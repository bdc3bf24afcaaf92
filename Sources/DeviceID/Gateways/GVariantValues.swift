import CLibSecret

/// Building and reading the few GVariant shapes DeviceID exchanges with the Secret Service.
/// GLib's `g_variant_new`/`g_variant_get` are C variadics, which Swift cannot call; these use the
/// typed constructors and accessors instead. Every returned `OpaquePointer` is a new reference.
enum GVariantValues {
    /// A GVariantType is its type string; a static one needs no allocation.
    private static func type(_ text: StaticString) -> OpaquePointer {
        OpaquePointer(text.utf8Start)
    }

    /// A tuple of strings, `(s…)`, floating (consumed by the call it is passed to).
    static func strings(_ values: [String]) -> OpaquePointer {
        var children: [OpaquePointer?] = values.map { g_variant_new_string($0) }
        return children.withUnsafeMutableBufferPointer { g_variant_new_tuple($0.baseAddress, gsize($0.count)) }
    }

    /// An `a{ss}` dictionary, floating.
    static func attributes(_ pairs: [(String, String)]) -> OpaquePointer {
        let builder = g_variant_builder_new(type("a{ss}"))
        defer { g_variant_builder_unref(builder) }
        for (key, value) in pairs {
            g_variant_builder_add_value(builder, g_variant_new_dict_entry(g_variant_new_string(key),
                                                                           g_variant_new_string(value)))
        }
        return g_variant_builder_end(builder)
    }

    /// Child `index` of a tuple, unwrapped from a `v` if it is one.
    static func child(_ tuple: OpaquePointer, _ index: Int) -> OpaquePointer? {
        guard g_variant_is_container(tuple) != 0, index < Int(g_variant_n_children(tuple)) else { return nil }
        let value = g_variant_get_child_value(tuple, gsize(index))!
        if g_variant_is_of_type(value, type("v")) != 0 {
            defer { g_variant_unref(value) }
            return g_variant_get_variant(value)
        }
        return value
    }

    static func string(_ value: OpaquePointer?) -> String? {
        guard let value, g_variant_is_of_type(value, type("s")) != 0
                || g_variant_is_of_type(value, type("o")) != 0 else { return nil }
        return String(cString: g_variant_get_string(value, nil))
    }

    static func bool(_ value: OpaquePointer?) -> Bool? {
        guard let value, g_variant_is_of_type(value, type("b")) != 0 else { return nil }
        return g_variant_get_boolean(value) != 0
    }

    static func uint64(_ value: OpaquePointer?) -> UInt64? {
        guard let value, g_variant_is_of_type(value, type("t")) != 0 else { return nil }
        return UInt64(g_variant_get_uint64(value))
    }

    /// The entries of an `a{ss}` or an `a{sv}` dictionary (values of other types are skipped).
    static func dictionary(_ value: OpaquePointer?) -> [String: OpaquePointer] {
        guard let value, g_variant_is_container(value) != 0 else { return [:] }
        var out = [String: OpaquePointer]()
        for i in 0..<g_variant_n_children(value) {
            guard let entry = g_variant_get_child_value(value, i) else { continue }
            defer { g_variant_unref(entry) }
            guard g_variant_n_children(entry) == 2, let key = child(entry, 0), let item = child(entry, 1) else { continue }
            defer { g_variant_unref(key) }
            if let name = string(key) { out[name] = item } else { g_variant_unref(item) }
        }
        return out
    }

    /// The `a{ss}` entries as Swift strings.
    static func stringDictionary(_ value: OpaquePointer?) -> [String: String] {
        var out = [String: String]()
        for (key, item) in dictionary(value) {
            if let text = string(item) { out[key] = text }
            g_variant_unref(item)
        }
        return out
    }
}
