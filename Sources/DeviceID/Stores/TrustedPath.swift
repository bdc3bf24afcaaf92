import CDeviceIDLibc

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
    static func openDirectory(_ path: String, create: Bool) throws(DeviceIDError) -> FileDescriptor? {
        guard path.hasPrefix("/") else { throw DeviceIDError(.invalidArgument, "\(path) is not an absolute path") }
        let flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW
        var pending = Array(components(path).reversed())
        var directory = try openRoot()
        var walked = ""
        var links = 0
        while let name = pending.popLast() {
            let shown = walked + "/" + name
            var next = directory.open(name, flags)
            if case .failure(.noEntry) = next {
                guard create else { return nil }
                if case .failure(let e) = directory.makeDirectory(name, mode: 0o700), e != .exists {
                    throw e.error("cannot create", shown)
                }
                next = directory.open(name, flags)
            }
            switch next {
            case .success(let opened):
                try checkDirectory(opened, shown)
                directory = opened
                walked = shown
            case .failure(let e) where e == .loop || e == .notDirectory:
                // A symbolic link (or not a directory at all): followed only if it is trusted.
                let target = try trustedLink(directory, name, shown)
                links += 1
                guard links <= maximumLinks else {
                    throw DeviceIDError(.permission, "\(path) goes through more than \(maximumLinks) symbolic links")
                }
                pending += components(target).reversed()
                if target.hasPrefix("/") {
                    directory = try openRoot()
                    walked = ""
                }
            case .failure(let e):
                throw e.error("cannot open", shown)
            }
        }
        return directory
    }

    private static func components(_ path: String) -> [String] {
        path.split(separator: "/", omittingEmptySubsequences: true).map(String.init).filter { $0 != "." }
    }

    private static func openRoot() throws(DeviceIDError) -> FileDescriptor {
        switch FileDescriptor.open("/", O_RDONLY | O_DIRECTORY) {
        case .success(let root): return root
        case .failure(let e): throw e.error("cannot open", "/")
        }
    }

    /// A directory on the way: root's or this user's, and writable by nobody else unless sticky.
    private static func checkDirectory(_ directory: FileDescriptor, _ path: String) throws(DeviceIDError) {
        let st: stat
        switch directory.status() {
        case .success(let s): st = s
        case .failure(let e): throw e.error("cannot stat", path)
        }
        let euid = geteuid()
        guard st.st_uid == 0 || st.st_uid == euid else {
            throw DeviceIDError(.permission, "\(path) is owned by uid \(st.st_uid): every directory on the way to the "
                + "store must belong to root or to uid \(euid); use a directory of your own (\(Environment.storeDirectory))")
        }
        guard st.st_mode & 0o022 == 0 || st.isSticky else {
            throw DeviceIDError(.permission, "\(path) is writable by group or others without the sticky bit "
                + "(mode \(String(st.st_mode & 0o7777, radix: 8))); run chmod go-w on it, or use another directory "
                + "(\(Environment.storeDirectory))")
        }
    }

    /// The target of the symbolic link `name` in `directory`, if root or this user owns it.
    private static func trustedLink(_ directory: FileDescriptor, _ name: String, _ shown: String) throws(DeviceIDError) -> String {
        let st: stat
        switch directory.status(of: name) {
        case .success(let s): st = s
        case .failure(let e): throw e.error("cannot stat", shown)
        }
        guard st.isSymbolicLink else {
            throw DeviceIDError(.permission, "\(shown) is not a directory")
        }
        guard st.st_uid == 0 || st.st_uid == geteuid() else {
            throw DeviceIDError(.permission, "\(shown) is a symbolic link owned by uid \(st.st_uid); only links of root "
                + "or of uid \(geteuid()) are followed. Use a directory of your own (\(Environment.storeDirectory))")
        }
        switch directory.readLink(name) {
        case .success(let target): return target
        case .failure(let e): throw e.error("cannot read the link", shown)
        }
    }
}
