import CDeviceIDLibc
import CDeviceIDSystem

/// The file store's directory, opened safely: reached through `TrustedPath`, owned by this user
/// and writable by nobody else. Every file operation is relative to the open descriptor
/// (`openat`, `renameat`), so the checks made here hold for the files too.
final class StoreDirectory {
    let path: String
    let descriptor: FileDescriptor

    /// The directory the file store uses when none is configured (`DEVICEID_STORE_DIR` or an
    /// override, `Configuration.storeDirectory`) — a function of who and where the process runs,
    /// never of which directories exist (docs/STATE.md, I4) — the first that applies:
    /// 1. `$STATE_DIRECTORY/deviceid` — a systemd service's `StateDirectory=` (its first entry);
    /// 2. `$XDG_DATA_HOME/deviceid`;
    /// 3. effective user root: `/var/lib/deviceid`, machine-wide — a root service, a root login
    ///    and root in a session are one user with one store;
    /// 4. `~/.local/share/deviceid`, the home from `$HOME` or else the password database.
    /// include/deviceid.h (deviceid_set_store_dir), docs/STATE.md "Stores" and docs/ENVIRONMENTS.md
    /// "System services" list the same, in this order (Tests/python/test_services.py checks the
    /// header's against what the library does).
    static func defaultLocation() throws(DeviceIDError) -> (path: String, legacy: String?) {
        if let state = try Environment.path("STATE_DIRECTORY"),
           let first = state.split(separator: ":").first, first.hasPrefix("/") {
            return (first + "/deviceid", nil)
        }
        // A relative one is ignored, as the XDG specification says, whatever its bytes.
        if Environment.value("XDG_DATA_HOME")?.hasPrefix("/") == true, let data = try Environment.path("XDG_DATA_HOME") {
            return (data + "/deviceid", nil)
        }
        // Root's legacy store is in root's home as the password database has it: `sudo -E` keeps
        // the caller's $HOME, which is not root's and not where root's IDs were kept.
        if geteuid() == 0 { return (systemPath, try passwordHome().map { $0 + "/.local/share/deviceid" }) }
        if let inHome = try home().map({ $0 + "/.local/share/deviceid" }) { return (inHome, nil) }
        throw DeviceIDError(.unavailable, "no home directory to keep the file store in; " + remedy)
    }

    /// Root's machine-wide store, for services and scripts that run outside any session.
    static let systemPath = "/var/lib/deviceid"

    /// What every store error that a configuration can fix suggests.
    static var remedy: Words {
        "set \(Environment.storeDirectory) to a directory this user owns (for a system service, "
            + "StateDirectory= provides one: SYSTEM SERVICES in deviceid(1))"
    }

    /// Why a store under the home directory cannot be made, when the cause is that there is no
    /// home: an account such as nobody has /nonexistent, and "Permission denied" would hide that.
    static func missingHome(under path: String) -> Words? {
        guard let home = try? home(), path.hasPrefix(home + "/"), access(home, F_OK) != 0 else { return nil }
        return "the home directory \(home) of uid \(geteuid()) does not exist (an account without a home, "
            + "such as nobody)"
    }

    private static func home() throws(DeviceIDError) -> String? {
        if let home = try Environment.path("HOME"), home.hasPrefix("/") { return home }
        return try passwordHome()
    }

    /// The effective user's home as the password database has it; refused with words when it is
    /// not UTF-8, as an environment path is (never read as another path).
    private static func passwordHome() throws(DeviceIDError) -> String? {
        // glibc's getpwuid holds a lock of its own: a child forked meanwhile by another thread
        // would wait for it for good in its first call (Tests/tpm/test_tpm_changes.py's forks, as
        // root, once every TPM call looked for its pin). fork() waits for the computing under way.
        dids_computing_begin()
        defer { dids_computing_end() }
        guard let entry = getpwuid(geteuid()), let dir = entry.pointee.pw_dir else { return nil }
        guard let home = Environment.exactText(dir) else {
            throw DeviceIDError(.invalidArgument, "the home directory of uid \(geteuid()) in the password database is "
                                + "not valid UTF-8: DeviceID uses only paths it can name exactly; " + remedy)
        }
        return home.hasPrefix("/") ? home : nil
    }

    /// Opens the directory through `TrustedPath`, creating it (and missing parents, 0700) when
    /// `create` is set. Returns nil when it does not exist and `create` is false.
    ///
    /// A factory, not a failable initializer: Embedded Swift (6.3.1) leaks the object of a class
    /// whose init returns nil or throws after it is allocated — 40 bytes a call, "definitely lost"
    /// under valgrind on every first run into a store not yet made (docs/ROBUSTNESS.md, "Leaks").
    /// Everything that can fail happens here, before the object exists.
    static func open(path: String, create: Bool) throws(DeviceIDError) -> StoreDirectory? {
        let opened: FileDescriptor?
        do {
            opened = try TrustedPath.openDirectory(path, create: create)
        } catch where error.code == .permission && !error.detail.includes(Environment.storeDirectory) {
            let cause = Self.missingHome(under: path).map { "cannot create \(path): \($0)" } ?? Words(error.detail)
            throw DeviceIDError(.permission, "\(cause); \(Self.remedy)")
        }
        guard let descriptor = opened else { return nil }
        switch descriptor.status() {
        case .success(let st): try PrivateOwnership.check(st, path: path)
        case .failure(let e): throw e.error("cannot stat", path)
        }
        return StoreDirectory(path: path, descriptor: descriptor)
    }

    private init(path: String, descriptor: FileDescriptor) {
        self.path = path
        self.descriptor = descriptor
    }

    /// fsync of the directory, so that a rename inside it survives a crash.
    func sync() throws(DeviceIDError) {
        if case .failure(let e) = descriptor.sync() { throw e.error("cannot fsync", path) }
    }
}
