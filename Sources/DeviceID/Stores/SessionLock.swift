import CDeviceIDLibc

/// The user's lock across store directories (docs/STATE.md, "Known limits"): two directories that
/// share one keyring take two different directory locks, so without this the first ID of a key
/// could be minted twice at once, once through each. Every mint, reset and setting change also
/// takes a record lock on `deviceid.lock` in `$XDG_RUNTIME_DIR` — the user's per-boot directory,
/// which every context that reaches a session bus has — after its directory's lock (one order
/// everywhere: no deadlock).
///
/// Best effort by design: with no runtime directory (a service, cron: no keyring either) or one
/// that is not the user's own, it is not taken, and the directory lock alone serializes; nor is it
/// waited for longer than the call's keyring deadline (another process may be waiting for a person
/// to answer an unlock prompt), after which the call goes on without it.
enum SessionLock {
    private static let threads = PThreadMutex()

    static func withLock<T>(waitingAtMost milliseconds: UInt32,
                            _ body: () throws(DeviceIDError) -> T) throws(DeviceIDError) -> T {
        try threads.withLock { () throws(DeviceIDError) -> T in
            // Held exactly as long as `body` runs: closing it drops the record lock.
            let lock = open(waitingAtMost: milliseconds)
            return try withExtendedLifetime(lock) { () throws(DeviceIDError) -> T in try body() }
        }
    }

    /// The locked file, or nil when there is no trusted runtime directory to keep it in, or the
    /// lock stayed taken for `milliseconds`.
    private static func open(waitingAtMost milliseconds: UInt32) -> FileDescriptor? {
        // A runtime directory whose name is not UTF-8 is none: read as a String it would be another path.
        guard let runtime = try? Environment.path("XDG_RUNTIME_DIR"), runtime.hasPrefix("/"),
              let directory = try? TrustedPath.openDirectory(runtime, create: false),
              case .success(let st) = directory.status(), st.st_uid == geteuid(), st.st_mode & 0o077 == 0,
              case .success(let file) = directory.open("deviceid.lock", O_RDWR | O_CREAT | O_NOFOLLOW, mode: 0o600)
        else { return nil }
        let step: UInt32 = 5
        var waited: UInt32 = 0
        while true {
            if case .success = file.tryLockForWriting() { return file }
            guard waited < milliseconds else { return nil }
            usleep(step * 1000)
            waited += step
        }
    }
}

extension SessionLock {
    /// Its lazily made locks, made before fork() (`LazyGlobals`).
    static func settleLazyGlobals() { _ = threads }
}
