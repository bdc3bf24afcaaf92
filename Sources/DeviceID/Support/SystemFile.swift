import Glibc

/// Small system files (/etc/machine-id, sysfs attributes): read whole, bounded, errno named.
enum SystemFile {
    /// The file's bytes, at most `limit`; longer files are cut (sysfs attributes are short).
    /// Only a regular file is read, and opening never blocks: a FIFO or a device named by
    /// `DEVICEID_MACHINE_ID_PATH` is refused instead of hanging the caller.
    static func read(_ path: String, limit: Int = 4096) throws(DeviceIDError) -> [UInt8] {
        let fd = SystemCall.retrying { open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY) }
        guard fd >= 0 else {
            if errno == ENOENT || errno == ENOTDIR { throw DeviceIDError(.notFound, "\(path) does not exist") }
            throw SystemCall.error("cannot open", path)
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw SystemCall.error("cannot stat", path) }
        guard st.st_mode & S_IFMT == S_IFREG else { throw DeviceIDError(.io, "\(path) is not a regular file") }
        var bytes = [UInt8](repeating: 0, count: limit)
        let count = try bytes.withUnsafeMutableBytes { buffer in
            Result { () throws(DeviceIDError) in try SystemCall.readFully(fd, into: buffer, path) }
        }.get()
        return Array(bytes.prefix(count))
    }

    /// A sysfs attribute as text without its trailing newline, or nil when absent or unreadable.
    static func attribute(_ path: String) -> String? {
        guard let bytes = try? read(path, limit: 256) else { return nil }
        var text = String(decoding: bytes, as: UTF8.self)
        while text.last == "\n" { text.removeLast() }
        return text
    }

    static func exists(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0
    }
}
