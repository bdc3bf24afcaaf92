import CDeviceIDLibc

/// An open file descriptor and the one owner of it: closed when the last reference goes, never
/// twice (after swift-system's FileDescriptor, reduced to what DeviceID does). Every system call
/// on a descriptor goes through here, retried on EINTR; failures come back as `Errno`, which
/// `SystemCall.error` turns into DeviceIDErrors with the path in words.
final class FileDescriptor {
    let rawValue: Int32

    private init(owning rawValue: Int32) { self.rawValue = rawValue }

    deinit { close(rawValue) }

    /// An errno value.
    struct Errno: Error, Equatable {
        let rawValue: Int32
        static var current: Errno { Errno(rawValue: errno) }
        static let noEntry = Errno(rawValue: ENOENT)
        static let notDirectory = Errno(rawValue: ENOTDIR)
        static let loop = Errno(rawValue: ELOOP)
        static let exists = Errno(rawValue: EEXIST)

        /// The DeviceIDError for `operation` on `path` that failed with this errno.
        func error(_ operation: String, _ path: Words) -> DeviceIDError {
            SystemCall.error(operation, path, errno: rawValue)
        }

        @_disfavoredOverload
        func error<Path: StringProtocol>(_ operation: String, _ path: Path) -> DeviceIDError {
            SystemCall.error(operation, Words(String(path)), errno: rawValue)
        }
    }

    private static func result(_ fd: Int32) -> Result<FileDescriptor, Errno> {
        fd >= 0 ? .success(FileDescriptor(owning: fd)) : .failure(.current)
    }

    /// open(2) with O_CLOEXEC added.
    static func open(_ path: String, _ flags: Int32, mode: mode_t = 0) -> Result<FileDescriptor, Errno> {
        result(SystemCall.retrying { dids_open(path, flags | O_CLOEXEC, mode) })
    }

    /// pipe2(2) with O_CLOEXEC: the read end and the write end.
    static func pipe() -> Result<(read: FileDescriptor, write: FileDescriptor), Errno> {
        var ends: [Int32] = [-1, -1]
        guard dids_pipe_cloexec(&ends) == 0 else { return .failure(.current) }
        return .success((FileDescriptor(owning: ends[0]), FileDescriptor(owning: ends[1])))
    }

    /// Waits up to `milliseconds` for this descriptor to be readable (or at its end): false at
    /// the timeout. poll(2), retried on EINTR with what is left of the time.
    func awaitReadable(until end: Int) -> Result<Bool, Errno> {
        while true {
            let left = end - Monotonic.milliseconds()
            guard left > 0 else { return .success(false) }
            var request = pollfd(fd: rawValue, events: Int16(POLLIN), revents: 0)
            let ready = poll(&request, 1, Int32(clamping: left))
            if ready > 0 { return .success(true) }
            if ready == 0 { continue }
            guard errno == EINTR else { return .failure(.current) }
        }
    }

    /// openat(2) relative to this directory, with O_CLOEXEC added.
    func open(_ name: String, _ flags: Int32, mode: mode_t = 0) -> Result<FileDescriptor, Errno> {
        FileDescriptor.result(SystemCall.retrying { dids_openat(rawValue, name, flags | O_CLOEXEC, mode) })
    }

    func status() -> Result<stat, Errno> {
        var st = stat()
        return fstat(rawValue, &st) == 0 ? .success(st) : .failure(.current)
    }

    /// The status of `name` in this directory, not following a final symbolic link.
    func status(of name: String) -> Result<stat, Errno> {
        var st = stat()
        return fstatat(rawValue, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? .success(st) : .failure(.current)
    }

    /// Reads until `buffer` is full or the file ends; the number of bytes read.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        var count = 0
        while count < buffer.count {
            let n = SystemCall.retrying { CDeviceIDLibc.read(rawValue, buffer.baseAddress! + count, buffer.count - count) }
            if n < 0 { return .failure(.current) }
            if n == 0 { break }
            count += n
        }
        return .success(count)
    }

    /// One read(2), for after `awaitReadable`: what is there now (0 at the end), without waiting
    /// for more. On a pipe or socket whose readiness was just seen, it does not block.
    func readSome(into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        let n = SystemCall.retrying { CDeviceIDLibc.read(rawValue, buffer.baseAddress!, buffer.count) }
        return n < 0 ? .failure(.current) : .success(n)
    }

    /// Writes every byte.
    func write(_ bytes: [UInt8]) -> Result<Void, Errno> {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { buffer in
                SystemCall.retrying { CDeviceIDLibc.write(rawValue, buffer.baseAddress! + offset, buffer.count - offset) }
            }
            guard n > 0 else { return .failure(n < 0 ? .current : Errno(rawValue: EIO)) }
            offset += n
        }
        return .success(())
    }

    func sync() -> Result<Void, Errno> {
        fsync(rawValue) == 0 ? .success(()) : .failure(.current)
    }

    /// Waits for a POSIX record lock on the whole file, for writing (`fcntl F_SETLKW`). It belongs
    /// to the process, is never inherited by a child, and ends when any descriptor of the file
    /// is closed.
    /// As `lockForWriting`, without waiting: `.failure(.wouldBlock)`-like errors (EAGAIN, EACCES)
    /// when another process holds the lock.
    func tryLockForWriting() -> Result<Void, Errno> {
        var request = flock()
        request.l_type = Int16(F_WRLCK)
        request.l_whence = Int16(SEEK_SET)
        return SystemCall.retrying({ dids_fcntl_lock(rawValue, F_SETLK, &request) }) == 0 ? .success(()) : .failure(.current)
    }

    func lockForWriting() -> Result<Void, Errno> {
        var request = flock()
        request.l_type = Int16(F_WRLCK)
        request.l_whence = Int16(SEEK_SET)
        return SystemCall.retrying({ dids_fcntl_lock(rawValue, F_SETLKW, &request) }) == 0 ? .success(()) : .failure(.current)
    }

    // MARK: As a directory

    func makeDirectory(_ name: String, mode: mode_t) -> Result<Void, Errno> {
        mkdirat(rawValue, name, mode) == 0 ? .success(()) : .failure(.current)
    }

    func rename(_ name: String, to newName: String) -> Result<Void, Errno> {
        renameat(rawValue, name, rawValue, newName) == 0 ? .success(()) : .failure(.current)
    }

    func unlink(_ name: String) -> Result<Void, Errno> {
        unlinkat(rawValue, name, 0) == 0 ? .success(()) : .failure(.current)
    }

    func readLink(_ name: String) -> Result<String, Errno> {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = buffer.withUnsafeMutableBufferPointer { readlinkat(rawValue, name, $0.baseAddress!, Int(PATH_MAX)) }
        guard length > 0 else { return .failure(.current) }
        return .success(String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// Whether this user may `mode` (W_OK, X_OK…) the entry `name` ("." for the directory itself).
    func isAccessible(_ name: String, _ mode: Int32) -> Bool {
        faccessat(rawValue, name, mode, AT_EACCESS) == 0
    }

    /// The names in this directory.
    func names() -> [String] {
        let listing = dup(rawValue)
        guard listing >= 0 else { return [] }
        guard let stream = fdopendir(listing) else {
            close(listing)
            return []
        }
        defer { closedir(stream) }
        return DirectoryListing.names(stream)
    }
}
