import Glibc

/// The embedded store for machines where no Secret Service answers: one checksummed file per
/// item in a private directory (see `StoreDirectory` and `FileEnvelope`).
///
/// Replacement is atomic — a temporary file, fsync, rename, fsync of the directory — so a crash at
/// any point leaves the old or the new content, never a torn one.
struct FileStore: Sendable {
    let path: String

    /// The file holding `key`: a kind prefix and 40 hex digits of SHA-256 of the key, so that any
    /// service and account map to a short, safe name and lookups cost the same for 10 or 10,000 items.
    static func fileName(for key: StoreKey) throws(DeviceIDError) -> String {
        let digest = try LibCrypto.hash(.sha256, [key.kind.rawValue] + key.encoded)
        let prefix = key.kind == .identifier ? "id-" : "secret-"
        return prefix + Hex.encode(digest.prefix(20))
    }

    /// The stored value, or nil when the store positively has none.
    func read(_ key: StoreKey) throws(DeviceIDError) -> [UInt8]? {
        guard let dir = try StoreDirectory(path: path, create: false) else { return nil }
        let name = try Self.fileName(for: key)
        let fd = SystemCall.retrying { openat(dir.fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) }
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw SystemCall.error("cannot open", "\(path)/\(name)")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw SystemCall.error("cannot stat", "\(path)/\(name)") }
        try Self.checkFile(st, "\(path)/\(name)")
        guard st.st_size <= FileEnvelope.maximumFileSize else {
            throw DeviceIDError(.corrupt, "\(path)/\(name) is \(st.st_size) bytes, larger than any item")
        }
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        defer { wipe(&bytes) }
        let offset = try bytes.withUnsafeMutableBytes { buffer in
            Result { () throws(DeviceIDError) in try SystemCall.readFully(fd, into: buffer, "\(path)/\(name)") }
        }.get()
        guard offset == bytes.count else {
            throw DeviceIDError(.corrupt, "\(path)/\(name) changed size while being read")
        }
        do {
            return try FileEnvelope.decode(bytes, expecting: key)
        } catch {
            throw DeviceIDError(.corrupt, "\(path)/\(name): \(error.detail)")
        }
    }

    /// Replaces (or creates) the item atomically.
    func write(_ key: StoreKey, _ value: [UInt8]) throws(DeviceIDError) {
        guard value.count <= FileEnvelope.maximumValueSize else {
            throw DeviceIDError(.tooLarge, "\(value.count) bytes; the limit is \(FileEnvelope.maximumValueSize)")
        }
        guard let dir = try StoreDirectory(path: path, create: true) else {
            throw DeviceIDError(.internal, "store directory vanished while being created")
        }
        let name = try Self.fileName(for: key)
        var bytes = try FileEnvelope.encode(key: key, value: value)
        defer { wipe(&bytes) }
        let suffix = try SystemRandom.bytes(6)
        let temporary = ".tmp-\(name)-\(Hex.encode(suffix))"
        let fd = SystemCall.retrying {
            openat(dir.fd, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        }
        guard fd >= 0 else { throw SystemCall.error("cannot create", "\(path)/\(temporary)") }
        var committed = false
        defer {
            if !committed { unlinkat(dir.fd, temporary, 0) }
        }
        let written = Self.writeAll(fd, bytes)
        close(fd)
        if let failure = written { throw SystemCall.error(failure, "\(path)/\(temporary)") }
        guard renameat(dir.fd, temporary, dir.fd, name) == 0 else {
            throw SystemCall.error("cannot rename into place", "\(path)/\(name)")
        }
        committed = true
        try dir.sync()
    }

    /// Removes the item; false when there was none.
    @discardableResult
    func delete(_ key: StoreKey) throws(DeviceIDError) -> Bool {
        guard let dir = try StoreDirectory(path: path, create: false) else { return false }
        let name = try Self.fileName(for: key)
        if unlinkat(dir.fd, name, 0) != 0 {
            if errno == ENOENT { return false }
            throw SystemCall.error("cannot remove", "\(path)/\(name)")
        }
        try dir.sync()
        return true
    }

    /// Threads of this process take turns here before taking the file lock.
    private static let threads = PThreadMutex()
    private static let forkHandler: Void = ForkedChild.onFork { FileStore.threads.reinitializeInChild() }

    /// Runs `body` holding the store's cross-process lock: a POSIX record lock (`fcntl F_SETLKW`)
    /// on `.lock` in the directory, and an in-process mutex, since record locks exclude processes
    /// but not threads. Not `flock`: a flock belongs to the open file description, which a child
    /// forked meanwhile shares, so a sleeping child would hold the store locked; record locks
    /// belong to the process and are never inherited.
    func withLock<T>(_ body: () throws(DeviceIDError) -> T) throws(DeviceIDError) -> T {
        _ = Self.forkHandler
        return try Self.threads.withLock { () throws(DeviceIDError) -> T in
            guard let dir = try StoreDirectory(path: path, create: true) else {
                throw DeviceIDError(.internal, "store directory vanished while being created")
            }
            let fd = SystemCall.retrying { openat(dir.fd, ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600) }
            guard fd >= 0 else { throw SystemCall.error("cannot open lock file", "\(path)/.lock") }
            // Closing any descriptor of the file drops the process's record lock: this is the
            // only one, and it lives exactly as long as the lock.
            defer { close(fd) }
            var request = flock()
            request.l_type = Int16(F_WRLCK)
            request.l_whence = Int16(SEEK_SET)
            guard SystemCall.retrying({ fcntl(fd, F_SETLKW, &request) }) == 0 else {
                throw SystemCall.error("cannot lock", "\(path)/.lock")
            }
            Self.removeStaleTemporaries(dir)
            return try body()
        }
    }

    /// Temporary files of writers that died (SIGKILL, power loss) before their rename. Only old
    /// ones: a live writer's file is seconds old at most. Runs on the rare locked path (mint,
    /// reset), never on reads.
    private static func removeStaleTemporaries(_ dir: StoreDirectory) {
        let listing = dup(dir.fd)
        guard listing >= 0, let stream = fdopendir(listing) else { return }
        defer { closedir(stream) }
        let cutoff = time(nil) - 600
        for name in DirectoryListing.names(stream) where name.hasPrefix(".tmp-") {
            var st = stat()
            if fstatat(dir.fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_mtim.tv_sec < cutoff {
                unlinkat(dir.fd, name, 0)
            }
        }
    }

    /// Writes every byte and fsyncs; the failed operation's name, or nil.
    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> String? {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { buffer in
                SystemCall.retrying { Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset) }
            }
            guard n > 0 else { return "cannot write" }
            offset += n
        }
        return fsync(fd) == 0 ? nil : "cannot fsync"
    }

    /// A regular file with one name, privately owned (`PrivateOwnership`). A second link would
    /// let a read reach a file that is not the store's (a hard link to /etc/hostname, say).
    private static func checkFile(_ st: stat, _ path: String) throws(DeviceIDError) {
        guard st.st_mode & S_IFMT == S_IFREG else {
            throw DeviceIDError(.permission, "\(path) is not a regular file")
        }
        guard st.st_nlink == 1 else {
            throw DeviceIDError(.permission, "\(path) has \(st.st_nlink) hard links; a store item has one")
        }
        try PrivateOwnership.check(st, path: path)
    }
}
