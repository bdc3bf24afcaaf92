import CDeviceIDSystem
import CDeviceIDLibc

/// Reads of the process environment, in one place so that tests and docs agree on the names.
///
/// Through `secure_getenv`: in a set-user-ID, set-group-ID or capability-raised process
/// (`AT_SECURE`) no variable is read at all, so the user who started it cannot choose where it
/// creates directories or which file it reads as the machine ID. There the home directory comes
/// from the password database of the effective user (`StoreDirectory.defaultLocation`), and the
/// session bus is not looked for.
enum Environment {
    static let backend = "DEVICEID_BACKEND"
    static let storeDirectory = "DEVICEID_STORE_DIR"
    static let timeout = "DEVICEID_TIMEOUT_MS"
    static let interactive = "DEVICEID_INTERACTIVE"
    static let mirrorRecheck = "DEVICEID_MIRROR_RECHECK_S"
    static let protection = "DEVICEID_PROTECTION"
    static let machineIDPath = "DEVICEID_MACHINE_ID_PATH"
    static let sysfsRoot = "DEVICEID_SYSFS_ROOT"
    static let tpmTCTI = "DEVICEID_TPM_TCTI"

    /// The value of `name`, or nil when it is unset or empty.
    static func value(_ name: String) -> String? {
        guard let raw = dids_secure_getenv(name) else { return nil }
        let value = String(cString: raw)
        return value.isEmpty ? nil : value
    }

    /// A path from the environment (a store's directory or one it is found under, the runtime
    /// directory, the machine ID's file, the TPM's), or nil when unset or empty. Every path the environment
    /// gives is read here. Bytes that are not UTF-8 are refused with words, as `--store-dir`
    /// refuses them: read as a String they would become U+FFFD, and `…/x\xfe` and `…/x\xff` would
    /// share one store at a third path beside both. `remedy` says what to set instead.
    static func path(_ name: String, remedy: Words? = nil) throws(DeviceIDError) -> String? {
        guard let raw = dids_secure_getenv(name) else { return nil }
        guard let value = exactText(raw) else {
            throw DeviceIDError(.invalidArgument, "\(name) is not valid UTF-8: DeviceID uses only paths it can name "
                                + "exactly; \(remedy ?? "set \(storeDirectory) to a directory whose name is UTF-8")")
        }
        return value.isEmpty ? nil : value
    }

    /// The C string `raw` as a String whose UTF-8 is its bytes exactly, or nil when it is not
    /// valid UTF-8 (`String(cString:)` would have made U+FFFD of those bytes: another path).
    static func exactText(_ raw: UnsafePointer<CChar>) -> String? {
        let bytes = UnsafeRawBufferPointer(start: raw, count: strlen(raw))
        let text = String(decoding: bytes, as: UTF8.self)
        return text.utf8.elementsEqual(bytes) ? text : nil
    }

    /// The sysfs root: `given`, else `DEVICEID_SYSFS_ROOT` (tests build one), else /sys.
    static func sysfs(_ given: String?) throws(DeviceIDError) -> String {
        if let given { return given }
        return try path(sysfsRoot, remedy: "name a directory whose path is UTF-8 in \(sysfsRoot), or unset it for /sys")
            ?? "/sys"
    }
}
