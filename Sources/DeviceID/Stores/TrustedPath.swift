import Glibc

/// Opens a directory by a path that no other user can redirect, component by component from `/`
/// (`openat` with `O_NOFOLLOW | O_DIRECTORY`), so that a check made on one component cannot be
/// undone by swapping another (`O_NOFOLLOW` alone guards only the last one, and `mkdir` follows
/// links).
///
/// OpenSSH's StrictModes rule, for every step: a directory on the way must belong to root or to
/// this user and be writable by nobody else, unless it has the sticky bit (`/tmp`), which keeps
/// others from renaming or removing what is not theirs; a symbolic link is followed only when
/// root or this user owns it (a home directory reached through a root-owned link, systemd's
/// `DynamicUser=` layout `/var/lib/NAME -> private/NAME`). Missing directories are created 0700
/// when asked; nothing existing is ever chmodded.
enum TrustedPath {
    /// More links than this is a loop, as for the kernel (`MAXSYMLINKS`).
    static let maximumLinks = 40

    /// The open directory at `path` (absolute), or nil when it does not exist and `create` is false.
    static func openDirectory(_ path: String, create: Bool) throws(DeviceIDError) -> Int32? {
        guard path.hasPrefix("/") else { throw DeviceIDError(.invalidArgument, "\(path) is not an absolute path") }
        var pending = Array(components(path).reversed())
        var fd = try openRoot()
        var walked = ""
        var links = 0
        while let name = pending.popLast() {
            let shown = walked + "/" + name
            var next = SystemCall.retrying { openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
            if next < 0 && errno == ENOENT {
                guard create else {
                    close(fd)
                    return nil
                }
                if mkdirat(fd, name, 0o700) != 0 && errno != EEXIST {
                    let error = SystemCall.error("cannot create", shown)
                    close(fd)
                    throw error
                }
                next = SystemCall.retrying { openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
            }
            if next < 0 && (errno == ELOOP || errno == ENOTDIR) {
                // A symbolic link (or not a directory at all): follow it only if it is trusted.
                let target: String
                do throws(DeviceIDError) {
                    target = try trustedLink(fd, name, shown)
                } catch {
                    close(fd)
                    throw error
                }
                links += 1
                guard links <= maximumLinks else {
                    close(fd)
                    throw DeviceIDError(.permission, "\(path) goes through more than \(maximumLinks) symbolic links")
                }
                pending += components(target).reversed()
                if target.hasPrefix("/") {
                    close(fd)
                    fd = try openRoot()
                    walked = ""
                }
                continue
            }
            guard next >= 0 else {
                let error = SystemCall.error("cannot open", shown)
                close(fd)
                throw error
            }
            close(fd)
            fd = next
            walked = shown
            do throws(DeviceIDError) {
                try checkDirectory(fd, shown)
            } catch {
                close(fd)
                throw error
            }
        }
        return fd
    }

    private static func components(_ path: String) -> [String] {
        path.split(separator: "/", omittingEmptySubsequences: true).map(String.init).filter { $0 != "." }
    }

    private static func openRoot() throws(DeviceIDError) -> Int32 {
        let fd = SystemCall.retrying { open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else { throw SystemCall.error("cannot open", "/") }
        return fd
    }

    /// A directory on the way: root's or this user's, and writable by nobody else unless sticky.
    private static func checkDirectory(_ fd: Int32, _ path: String) throws(DeviceIDError) {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw SystemCall.error("cannot stat", path) }
        let euid = geteuid()
        guard st.st_uid == 0 || st.st_uid == euid else {
            throw DeviceIDError(.permission, "\(path) is owned by uid \(st.st_uid): every directory on the way to the "
                + "store must belong to root or to uid \(euid); use a directory of your own (\(Environment.storeDirectory))")
        }
        guard st.st_mode & 0o022 == 0 || st.st_mode & S_ISVTX != 0 else {
            throw DeviceIDError(.permission, "\(path) is writable by group or others without the sticky bit "
                + "(mode \(String(st.st_mode & 0o7777, radix: 8))); run chmod go-w on it, or use another directory "
                + "(\(Environment.storeDirectory))")
        }
    }

    /// The target of the symbolic link `name` in `directory`, if root or this user owns it.
    private static func trustedLink(_ directory: Int32, _ name: String, _ shown: String) throws(DeviceIDError) -> String {
        var st = stat()
        guard fstatat(directory, name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { throw SystemCall.error("cannot stat", shown) }
        guard st.st_mode & S_IFMT == S_IFLNK else {
            throw DeviceIDError(.permission, "\(shown) is not a directory")
        }
        guard st.st_uid == 0 || st.st_uid == geteuid() else {
            throw DeviceIDError(.permission, "\(shown) is a symbolic link owned by uid \(st.st_uid); only links of root "
                + "or of uid \(geteuid()) are followed. Use a directory of your own (\(Environment.storeDirectory))")
        }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = buffer.withUnsafeMutableBufferPointer { readlinkat(directory, name, $0.baseAddress!, Int(PATH_MAX)) }
        guard length > 0 else { throw SystemCall.error("cannot read the link", shown) }
        return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
