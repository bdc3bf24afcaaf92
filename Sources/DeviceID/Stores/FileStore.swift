import CDeviceIDLibc

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
        let digest = SHA256.hash([key.kind.rawValue] + key.encoded)
        let prefix = switch key.kind {
        case .identifier: "id-"
        case .secret: "secret-"
        case .sealedSecret: "sealed-"
        case .state: "state-"
        }
        return prefix + Hex.encode(digest.prefix(20))
    }

    /// The stored value, or nil when the store positively has none.
    func read(_ key: StoreKey) throws(DeviceIDError) -> [UInt8]? {
        guard let dir = try StoreDirectory.open(path: path, create: false) else { return nil }
        let name = try Self.fileName(for: key)
        guard var bytes = try Self.readFile(dir, name, path) else { return nil }
        defer { wipe(&bytes) }
        do {
            return try FileEnvelope.decode(bytes, expecting: key)
        } catch {
            throw DeviceIDError(.corrupt, "\(path)/\(name): \(error.detail)")
        }
    }

    /// Whether any identifier file (`id-…`) holds a valid value that satisfies `test`, and how
    /// many were looked at. For the rare questions about the whole store (docs/STATE.md, the
    /// keyring marker of 0.2.0 stores), asked once per store; unreadable files are skipped.
    func anyIdentifierValue(where test: ([UInt8]) -> Bool) throws(DeviceIDError) -> (found: Bool, scanned: Int) {
        guard let dir = try StoreDirectory.open(path: path, create: false) else { return (false, 0) }
        var scanned = 0
        for name in dir.descriptor.names() where name.hasPrefix("id-") {
            scanned += 1
            guard var bytes = try? Self.readFile(dir, name, path) else { continue }
            defer { wipe(&bytes) }
            if let value = try? FileEnvelope.decodeValue(bytes), test(value) { return (true, scanned) }
        }
        return (false, scanned)
    }

    /// The bytes of one file of the store, checked as `checkFile` says; nil when it does not exist.
    private static func readFile(_ dir: StoreDirectory, _ name: String, _ path: String) throws(DeviceIDError) -> [UInt8]? {
        let file: FileDescriptor
        switch dir.descriptor.open(name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK) {
        case .success(let opened): file = opened
        case .failure(.noEntry): return nil
        case .failure(let e): throw e.error("cannot open", "\(path)/\(name)")
        }
        let st: stat
        switch file.status() {
        case .success(let s): st = s
        case .failure(let e): throw e.error("cannot stat", "\(path)/\(name)")
        }
        try Self.checkFile(st, "\(path)/\(name)")
        guard st.st_size <= FileEnvelope.maximumFileSize else {
            throw DeviceIDError(.corrupt, "\(path)/\(name) is \(st.st_size) bytes, larger than any item")
        }
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        let offset: Int
        switch bytes.withUnsafeMutableBytes({ file.read(into: $0) }) {
        case .success(let count): offset = count
        case .failure(let e):
            wipe(&bytes)
            throw e.error("cannot read", "\(path)/\(name)")
        }
        guard offset == bytes.count else {
            wipe(&bytes)
            throw DeviceIDError(.corrupt, "\(path)/\(name) changed size while being read")
        }
        return bytes
    }

    /// Replaces (or creates) the item atomically.
    func write(_ key: StoreKey, _ value: [UInt8]) throws(DeviceIDError) {
        try stage(key, value).commit()
    }

    /// The replacement of an item, written and synced under a temporary name: `commit()` puts it
    /// in place (a rename), and one never committed is removed. What lets a change that must also
    /// reach the keyring prepare the file first and change nothing when the keyring refuses.
    final class Staged {
        private let directory: StoreDirectory
        private let temporary: String
        private let name: String
        private var committed = false

        fileprivate init(_ directory: StoreDirectory, temporary: String, name: String) {
            self.directory = directory
            self.temporary = temporary
            self.name = name
        }

        func commit() throws(DeviceIDError) {
            if case .failure(let e) = directory.descriptor.rename(temporary, to: name) {
                throw e.error("cannot rename into place", "\(directory.path)/\(name)")
            }
            committed = true
            try directory.sync()
        }

        deinit {
            if !committed { _ = directory.descriptor.unlink(temporary) }
        }
    }

    func stage(_ key: StoreKey, _ value: [UInt8]) throws(DeviceIDError) -> Staged {
        guard value.count <= FileEnvelope.maximumValueSize else {
            throw DeviceIDError(.tooLarge, "\(value.count) bytes; the limit is \(FileEnvelope.maximumValueSize)")
        }
        guard let dir = try StoreDirectory.open(path: path, create: true) else {
            throw DeviceIDError(.internal, "store directory vanished while being created")
        }
        let name = try Self.fileName(for: key)
        var bytes = try FileEnvelope.encode(key: key, value: value)
        defer { wipe(&bytes) }
        let suffix = try SystemRandom.bytes(6)
        let temporary = ".tmp-\(name)-\(Hex.encode(suffix))"
        let file: FileDescriptor
        switch dir.descriptor.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600) {
        case .success(let opened): file = opened
        case .failure(let e): throw e.error("cannot create", "\(path)/\(temporary)")
        }
        let staged = Staged(dir, temporary: temporary, name: name)
        if case .failure(let e) = file.write(bytes) { throw e.error("cannot write", "\(path)/\(temporary)") }
        if case .failure(let e) = file.sync() { throw e.error("cannot fsync", "\(path)/\(temporary)") }
        return staged
    }

    /// Removes the item; false when there was none.
    @discardableResult
    func delete(_ key: StoreKey) throws(DeviceIDError) -> Bool {
        guard let dir = try StoreDirectory.open(path: path, create: false) else { return false }
        let name = try Self.fileName(for: key)
        if case .failure(let e) = dir.descriptor.unlink(name) {
            if e == .noEntry { return false }
            throw e.error("cannot remove", "\(path)/\(name)")
        }
        try dir.sync()
        return true
    }

    /// Threads of this process take turns here before taking the file lock.
    private static let threads = PThreadMutex()

    /// Runs `body` holding the store's cross-process lock: a POSIX record lock (`fcntl F_SETLKW`)
    /// on `.lock` in the directory, and an in-process mutex, since record locks exclude processes
    /// but not threads. Not `flock`: a flock belongs to the open file description, which a child
    /// forked meanwhile shares, so a sleeping child would hold the store locked; record locks
    /// belong to the process and are never inherited.
    func withLock<T>(_ body: () throws(DeviceIDError) -> T) throws(DeviceIDError) -> T {
        try Self.threads.withLock { () throws(DeviceIDError) -> T in
            let lock = try takeLock()
            return try withExtendedLifetime(lock) { () throws(DeviceIDError) -> T in try body() }
        }
    }

    /// As `withLock`, for a caller that does not keep anything here (the secret-service backend):
    /// where the directory cannot be made or its lock file opened (a read-only or foreign path),
    /// `body` runs with the in-process lock only.
    func withLockWherePossible<T>(_ body: () throws(DeviceIDError) -> T) throws(DeviceIDError) -> T {
        try Self.threads.withLock { () throws(DeviceIDError) -> T in
            let lock: FileDescriptor?
            do throws(DeviceIDError) {
                lock = try takeLock()
            } catch where error.code == .permission || error.code == .io {
                lock = nil
            }
            return try withExtendedLifetime(lock) { () throws(DeviceIDError) -> T in try body() }
        }
    }

    /// The directory's lock file, locked. Closing any descriptor of the file drops the process's
    /// record lock: this is the only one, and it must live exactly as long as the lock.
    private func takeLock() throws(DeviceIDError) -> FileDescriptor {
        guard let dir = try StoreDirectory.open(path: path, create: true) else {
            throw DeviceIDError(.internal, "store directory vanished while being created")
        }
        let lock: FileDescriptor
        switch dir.descriptor.open(".lock", O_RDWR | O_CREAT | O_NOFOLLOW, mode: 0o600) {
        case .success(let opened): lock = opened
        case .failure(let e): throw e.error("cannot open lock file", "\(path)/.lock")
        }
        if case .failure(let e) = lock.lockForWriting() { throw e.error("cannot lock", "\(path)/.lock") }
        Self.removeStaleTemporaries(dir)
        return lock
    }

    /// Temporary files of writers that died (SIGKILL, power loss) before their rename. Only old
    /// ones: a live writer's file is seconds old at most. Runs on the rare locked path (mint,
    /// reset), never on reads.
    private static func removeStaleTemporaries(_ dir: StoreDirectory) {
        let cutoff = Int(WallClock.seconds()) - 600
        for name in dir.descriptor.names() where name.hasPrefix(".tmp-") {
            if case .success(let st) = dir.descriptor.status(of: name), st.st_mtim.tv_sec < cutoff {
                _ = dir.descriptor.unlink(name)
            }
        }
    }

    /// A regular file with no second name, privately owned (`PrivateOwnership`). A second link
    /// would let a read reach a file that is not the store's (a hard link to /etc/hostname, say).
    /// No name at all is fine: another process replaced or removed the item after this one
    /// opened it, and what was opened is a whole, earlier version (replacement is a rename).
    private static func checkFile(_ st: stat, _ path: String) throws(DeviceIDError) {
        guard st.isRegularFile else {
            throw DeviceIDError(.permission, "\(path) is not a regular file")
        }
        guard st.st_nlink <= 1 else {
            throw DeviceIDError(.permission, "\(path) has \(st.st_nlink) hard links; a store item has one")
        }
        try PrivateOwnership.check(st, path: path)
    }
}

extension FileStore {
    /// Its lazily made locks, made before fork() (`LazyGlobals`).
    static func settleLazyGlobals() { _ = threads }
}
