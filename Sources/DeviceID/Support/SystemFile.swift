import CDeviceIDLibc

/// Small system files (/etc/machine-id, sysfs attributes): read whole, bounded, errno named.
enum SystemFile {
    /// The file's bytes, at most `limit`; longer files are cut (sysfs attributes are short).
    /// Only a regular file is read, and opening never blocks: a FIFO or a device named by
    /// `DEVICEID_MACHINE_ID_PATH` is refused instead of hanging the caller.
    static func read(_ path: String, limit: Int = 4096) throws(DeviceIDError) -> [UInt8] {
        let file: FileDescriptor
        switch FileDescriptor.open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY) {
        case .success(let opened): file = opened
        case .failure(let e) where e == .noEntry || e == .notDirectory:
            throw DeviceIDError(.notFound, "\(path) does not exist")
        case .failure(let e): throw e.error("cannot open", path)
        }
        let st: stat
        switch file.status() {
        case .success(let s): st = s
        case .failure(let e): throw e.error("cannot stat", path)
        }
        guard st.isRegularFile else { throw DeviceIDError(.io, "\(path) is not a regular file") }
        var bytes = [UInt8](repeating: 0, count: limit)
        switch bytes.withUnsafeMutableBytes({ file.read(into: $0) }) {
        case .success(let count): return Array(bytes.prefix(count))
        case .failure(let e): throw e.error("cannot read", path)
        }
    }

    /// A kernel-made text file (/proc/stat) read until its end, at most `limit` bytes (cut there);
    /// nil when absent or unreadable.
    static func text(_ path: String, limit: Int = 1 << 20) -> String? {
        whole(path, limit: limit).map { String(decoding: $0.bytes, as: UTF8.self) }
    }

    /// A kernel-made file (/proc/self/mountinfo) read until its end: its bytes, at most `limit`,
    /// and whether that was all of it; nil when absent or unreadable. A /proc file may answer one
    /// read with part of itself.
    static func whole(_ path: String, limit: Int) -> (bytes: [UInt8], complete: Bool)? {
        guard case .success(let file) = FileDescriptor.open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY) else { return nil }
        var out = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65536)
        while out.count <= limit {
            guard case .success(let count) = chunk.withUnsafeMutableBytes({ file.read(into: $0) }) else { return nil }
            if count == 0 { return (out, true) }
            out += chunk[0..<count]
        }
        return (Array(out.prefix(limit)), false)
    }

    /// A sysfs attribute as text without its trailing newline, or nil when absent or unreadable.
    static func attribute(_ path: String) -> String? {
        guard let bytes = try? read(path, limit: 256) else { return nil }
        var text = String(decoding: bytes, as: UTF8.self)
        while text.last == "\n" { text.removeLast() }
        return text
    }

    /// Whether `path` is a socket (the session bus's, say).
    static func isSocket(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && st.isSocket
    }

    static func exists(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0
    }
}
