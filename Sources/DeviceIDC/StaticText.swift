import DeviceID

/// Text with static storage for the `const char *` a C caller may keep forever.
enum StaticText {
    static func pointer(_ text: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
    }

    static func summary(_ status: Int32) -> StaticString {
        status == 0 ? "success" : DeviceIDError.Code(rawValue: status).staticSummary
    }

    static func name(_ status: Int32) -> StaticString {
        status == 0 ? "OK" : DeviceIDError.Code(rawValue: status).staticName
    }
}
