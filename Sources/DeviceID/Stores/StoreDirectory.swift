import CDeviceIDLibc

/// The file store's directory, opened safely: reached through `TrustedPath`, owned by this user
/// and writable by nobody else. Every file operation is relative to the open descriptor
/// (`openat`, `renameat`), so the checks made here hold for the files too.
final class StoreDirectory {
    let path: String
    let descriptor: FileDescriptor

    /// The directory the file store uses: `$DEVICEID_STORE_DIR`, else `$XDG_DATA_HOME/deviceid`,
    /// else `~/.local/share/deviceid`.
    static func defaultPath() throws(DeviceIDError) -> String {
        if let dir = Environment.value(Environment.storeDirectory) {
            guard dir.hasPrefix("/") else {
                throw DeviceIDError(.invalidArgument, "\(Environment.storeDirectory) must be an absolute path")
            }
            return dir
        }
        if let data = Environment.value("XDG_DATA_HOME"), data.hasPrefix("/") {
            return data + "/deviceid"
        }
        if let home = Environment.value("HOME"), home.hasPrefix("/") {
            return home + "/.local/share/deviceid"
        }
        if let entry = getpwuid(geteuid()), let dir = entry.pointee.pw_dir {
            let home = String(cString: dir)
            if home.hasPrefix("/") { return home + "/.local/share/deviceid" }
        }
        throw DeviceIDError(.unavailable, "no home directory to keep the file store in; set \(Environment.storeDirectory)")
    }

    /// Opens the directory through `TrustedPath`, creating it (and missing parents, 0700) when
    /// `create` is set. Returns nil when it does not exist and `create` is false.
    init?(path: String, create: Bool) throws(DeviceIDError) {
        self.path = path
        guard let descriptor = try TrustedPath.openDirectory(path, create: create) else { return nil }
        self.descriptor = descriptor
        switch descriptor.status() {
        case .success(let st): try PrivateOwnership.check(st, path: path)
        case .failure(let e): throw e.error("cannot stat", path)
        }
    }

    /// fsync of the directory, so that a rename inside it survives a crash.
    func sync() throws(DeviceIDError) {
        if case .failure(let e) = descriptor.sync() { throw e.error("cannot fsync", path) }
    }
}
