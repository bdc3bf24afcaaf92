import Glibc

/// The file store's directory, opened safely: never through a symlink, owned by this user,
/// mode 0700. Every file operation is relative to the open descriptor (`openat`, `renameat`), so
/// the checks made here hold for the files too.
final class StoreDirectory {
    let path: String
    let fd: Int32

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

    /// Opens the directory, creating it (and missing parents, mode 0700) when `create` is set.
    /// Returns nil when it does not exist and `create` is false.
    init?(path: String, create: Bool) throws(DeviceIDError) {
        self.path = path
        var fd = Self.openNoFollow(path)
        if fd < 0 && errno == ENOENT {
            guard create else { return nil }
            try Self.makeDirectories(path)
            fd = Self.openNoFollow(path)
        }
        guard fd >= 0 else {
            if errno == ENOTDIR || errno == ELOOP {
                throw DeviceIDError(.permission, "\(path) is a symbolic link or not a directory")
            }
            throw SystemCall.error("cannot open store directory", path)
        }
        self.fd = fd
        do {
            try Self.checkOwnership(fd: fd, path: path)
        } catch {
            close(fd)
            throw error
        }
    }

    deinit { close(fd) }

    private static func openNoFollow(_ path: String) -> Int32 {
        SystemCall.retrying { open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
    }

    private static func makeDirectories(_ path: String) throws(DeviceIDError) {
        var prefix = ""
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                throw SystemCall.error("cannot create", prefix)
            }
        }
    }

    /// Privately owned (`PrivateOwnership`), mode 0700.
    private static func checkOwnership(fd: Int32, path: String) throws(DeviceIDError) {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw SystemCall.error("cannot stat", path) }
        try PrivateOwnership.enforce(st, path: path, fd: fd, privateMode: 0o700)
    }

    /// fsync of the directory, so that a rename inside it survives a crash.
    func sync() throws(DeviceIDError) {
        guard fsync(fd) == 0 else { throw SystemCall.error("cannot fsync", path) }
    }
}
