import CDeviceIDLibc

/// This process's mounts (`/proc/self/mountinfo`, proc(5)): which mount holds a path, and what
/// it is — the container's own root, a tmpfs, a volume, a directory of the host bound in.
struct MountTable {
    struct Mount: Equatable {
        /// The file system's device ("major:minor"; 0:N for a tmpfs or an overlay, one per
        /// instance): every mount of one file system shows the same.
        var device: String = ""
        /// The path inside the mounted file system that appears at `mountPoint` ("/" for all of
        /// it; a bind mount's source directory, as the host's file system knows it).
        let root: String
        let mountPoint: String
        let fileSystem: String
        let source: String
        /// The file system's own options (an overlay's `lowerdir=…,upperdir=…`).
        var superOptions: String = ""
    }

    let mounts: [Mount]

    static func current() -> MountTable {
        MountTable(parsing: SystemFile.text("/proc/self/mountinfo") ?? "")
    }

    init(parsing text: String) {
        var mounts = [Mount]()
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            // id parent major:minor root mount-point options [optional…] - type source super-options
            guard fields.count >= 10, let dash = fields[6...].firstIndex(of: "-"), dash + 2 < fields.count else { continue }
            mounts.append(Mount(device: fields[2], root: Self.unescaped(fields[3]), mountPoint: Self.unescaped(fields[4]),
                                fileSystem: fields[dash + 1], source: Self.unescaped(fields[dash + 2]),
                                superOptions: dash + 3 < fields.count ? fields[dash + 3] : ""))
        }
        self.mounts = mounts
    }

    /// The mount `path` (absolute, without symbolic links) lies on: the last one listed at the
    /// longest mount point that contains it (a later mount at the same point hides an earlier one).
    func mount(holding path: String) -> Mount? {
        var best: Mount?
        for mount in mounts where Self.contains(mount.mountPoint, path) {
            if best == nil || mount.mountPoint.utf8.count >= best!.mountPoint.utf8.count { best = mount }
        }
        return best
    }

    /// Whether `path` is `directory` or lies under it, by whole components.
    static func contains(_ directory: String, _ path: String) -> Bool {
        if directory == "/" { return path.hasPrefix("/") }
        return path == directory || path.hasPrefix(directory + "/")
    }

    /// Whether the file system `mount` is a part of is also mounted whole (its root, "/") here.
    func showsWhole(_ mount: Mount) -> Bool {
        mounts.contains { $0.device == mount.device && $0.root == "/" }
    }

    /// The mount at exactly `path`, if `path` is a mount point.
    func mount(at path: String) -> Mount? {
        mounts.last { $0.mountPoint == path }
    }

    /// mountinfo writes space, tab, newline and backslash as `\040`, `\011`, `\012`, `\134`.
    static func unescaped(_ field: String) -> String {
        guard field.utf8.contains(UInt8(ascii: "\\")) else { return field }
        let bytes = Array(field.utf8)
        var out = [UInt8](), i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "\\"), i + 3 < bytes.count, let value = octal(bytes[(i + 1)..<(i + 4)]) {
                out.append(value)
                i += 4
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
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

    /// `path` made absolute and free of symbolic links as far as it exists: the deepest existing
    /// ancestor through realpath(3), the rest as written (the store may not exist yet).
    static func resolved(_ path: String) -> String {
        var existing = path
        var rest = [Substring]()
        while true {
            if let real = realpath(existing, nil) {
                defer { free(real) }
                var out = String(cString: real)
                for component in rest.reversed() { out += (out == "/" ? "" : "/") + component }
                return out
            }
            guard let slash = existing.utf8.lastIndex(of: UInt8(ascii: "/")) else { return path }
            let index = String.Index(slash, within: existing)!
            rest.append(existing[existing.index(after: index)...])
            existing = index == existing.startIndex ? "/" : String(existing[..<index])
        }
    }
}
