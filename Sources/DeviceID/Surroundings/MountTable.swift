import CDeviceIDLibc

/// This process's mounts (`/proc/self/mountinfo`, proc(5)): which mount holds a path, and what
/// it is — the container's own root, a tmpfs, a volume, a directory of the host bound in.
///
/// Paths are bytes, as the kernel has them: a mount point need not be UTF-8 (mountinfo's `\376`
/// is the byte 0xFE), and two paths are the same only byte for byte — never by Unicode's
/// canonical equivalence, under which an NFC `café` equals an NFD one that is another directory.
struct MountTable {
    struct Mount: Equatable {
        /// The file system's device ("major:minor"; 0:N for a tmpfs or an overlay, one per
        /// instance): every mount of one file system shows the same.
        var device: String = ""
        /// The path inside the mounted file system that appears at `mountPoint` ("/" for all of
        /// it; a bind mount's source directory, as the host's file system knows it).
        let rootBytes: [UInt8]
        let mountPointBytes: [UInt8]
        let fileSystem: String
        let sourceBytes: [UInt8]
        /// The file system's own options (an overlay's `lowerdir=…,upperdir=…`).
        var superOptions: String = ""

        init(device: String = "", root: [UInt8], mountPoint: [UInt8], fileSystem: String, source: [UInt8],
             superOptions: String = "") {
            self.device = device
            rootBytes = root
            mountPointBytes = mountPoint
            self.fileSystem = fileSystem
            sourceBytes = source
            self.superOptions = superOptions
        }

        init(device: String = "", root: String, mountPoint: String, fileSystem: String, source: String,
             superOptions: String = "") {
            self.init(device: device, root: Array(root.utf8), mountPoint: Array(mountPoint.utf8), fileSystem: fileSystem,
                      source: Array(source.utf8), superOptions: superOptions)
        }

        /// For words and for looking at its shape; never for telling two paths apart.
        var root: String { String(decoding: rootBytes, as: UTF8.self) }
        var mountPoint: String { String(decoding: mountPointBytes, as: UTF8.self) }
        var source: String { String(decoding: sourceBytes, as: UTF8.self) }
        var isRoot: Bool { rootBytes == MountTable.slash }
    }

    let mounts: [Mount]
    /// Whether the whole table was read. One that was not (beyond `readLimit`) cannot say which
    /// mount holds a path: a later line may hold it (`StorageLocation.ofFiles`).
    let complete: Bool

    /// Far beyond any real table (a 200,000-mount host lists about 30 MB), and a bound on memory.
    static let readLimit = 256 << 20
    static let slash: [UInt8] = [UInt8(ascii: "/")]

    static func current() -> MountTable {
        guard let table = SystemFile.whole("/proc/self/mountinfo", limit: readLimit) else {
            return MountTable(parsing: [], complete: false)
        }
        return MountTable(parsing: table.bytes, complete: table.complete)
    }

    init(parsing text: String) {
        self.init(parsing: Array(text.utf8), complete: true)
    }

    init(parsing bytes: [UInt8], complete: Bool) {
        var mounts = [Mount]()
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: true).map(Array.init)
            // id parent major:minor root mount-point options [optional…] - type source super-options
            guard fields.count >= 10, let dash = fields[6...].firstIndex(of: [UInt8(ascii: "-")]),
                  dash + 2 < fields.count else { continue }
            func text(_ field: [UInt8]) -> String { String(decoding: field, as: UTF8.self) }
            mounts.append(Mount(device: text(fields[2]), root: Self.unescaped(fields[3]),
                                mountPoint: Self.unescaped(fields[4]), fileSystem: text(fields[dash + 1]),
                                source: Self.unescaped(fields[dash + 2]),
                                superOptions: dash + 3 < fields.count ? text(fields[dash + 3]) : ""))
        }
        self.mounts = mounts
        self.complete = complete
    }

    /// The mount `path` (absolute, without symbolic links) lies on: the last one listed at the
    /// longest mount point that contains it (a later mount at the same point hides an earlier one).
    func mount(holding path: [UInt8]) -> Mount? {
        var best: Mount?
        for mount in mounts where Self.contains(mount.mountPointBytes, path) {
            if best == nil || mount.mountPointBytes.count >= best!.mountPointBytes.count { best = mount }
        }
        return best
    }

    func mount(holding path: String) -> Mount? { mount(holding: Array(path.utf8)) }

    /// Whether `path` is `directory` or lies under it, by whole components, byte for byte.
    static func contains(_ directory: [UInt8], _ path: [UInt8]) -> Bool {
        guard path.first == UInt8(ascii: "/") else { return false }
        if directory == slash { return true }
        guard path.starts(with: directory) else { return false }
        return path.count == directory.count || path[directory.count] == UInt8(ascii: "/")
    }

    /// Whether the file system `mount` is a part of is also mounted whole (its root, "/") here.
    func showsWhole(_ mount: Mount) -> Bool {
        mounts.contains { $0.device == mount.device && $0.isRoot }
    }

    /// The mount at exactly `path`, if `path` is a mount point.
    func mount(at path: String) -> Mount? {
        let bytes = Array(path.utf8)
        return mounts.last { $0.mountPointBytes == bytes }
    }

    /// mountinfo writes space, tab, newline and backslash (and any byte the kernel escapes) as
    /// three octal digits after a backslash: `\040`, `\011`, `\012`, `\134`.
    static func unescaped(_ field: [UInt8]) -> [UInt8] {
        guard field.contains(UInt8(ascii: "\\")) else { return field }
        var out = [UInt8](), i = 0
        while i < field.count {
            if field[i] == UInt8(ascii: "\\"), i + 3 < field.count, let value = octal(field[(i + 1)..<(i + 4)]) {
                out.append(value)
                i += 4
            } else {
                out.append(field[i])
                i += 1
            }
        }
        return out
    }

    private static func octal(_ digits: ArraySlice<UInt8>) -> UInt8? {
        guard digits.count == 3 else { return nil }
        var value = 0
        for digit in digits {
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "7") else { return nil }
            value = value * 8 + Int(digit - UInt8(ascii: "0"))
        }
        return value <= 255 ? UInt8(value) : nil
    }

    /// `path` made absolute and free of symbolic links as far as it exists, as bytes: the deepest
    /// existing ancestor through realpath(3) (whose answer need not be UTF-8: a link may point
    /// anywhere), the rest as written (the store may not exist yet).
    static func resolved(_ path: String) -> [UInt8] {
        var existing = path
        var rest = [Substring]()
        while true {
            if let real = realpath(existing, nil) {
                defer { free(real) }
                var out = Array(UnsafeRawBufferPointer(start: real, count: strlen(real)))
                for component in rest.reversed() {
                    if out != slash { out.append(UInt8(ascii: "/")) }
                    out += component.utf8
                }
                return out
            }
            guard let slashIndex = existing.utf8.lastIndex(of: UInt8(ascii: "/")) else { return Array(path.utf8) }
            let index = String.Index(slashIndex, within: existing)!
            rest.append(existing[existing.index(after: index)...])
            existing = index == existing.startIndex ? "/" : String(existing[..<index])
        }
    }
}
