import CDeviceIDLibc

/// No write reaches KeePassXC while it saves an earlier one: the write discipline that keeps a
/// user's KeePassXC from crashing because of how DeviceID talks to it.
///
/// What crashes it (KeePassXC 2.7.4, Debian 12; 2.7.10 crashes the same way): with "save after
/// every change" (its default), the first change arms a 150 ms timer (`Database::markAsModified`
/// starts it only when it is not running); then `Database::saveAs` serializes the database on a
/// pooled thread (`AsyncTask::runAndWaitForFuture`) while the main thread waits in a nested event
/// loop that keeps serving D-Bus. A `CreateItem` or `Item.Delete` served there changes the entry
/// tree the pooled thread is writing out, which then dies with SIGSEGV in `QUuid::toRfc4122()`.
/// Reads do not (measured: docs/ENVIRONMENTS.md, "KeePassXC"). The save lasts as long as the
/// database's key derivation (about 1 s for a database made with KeePassXC's defaults) plus the
/// writing out.
///
/// So writes to KeePassXC are one at a time, and each begins `settle` ms after the previous one
/// ended (its reply, or its prompt's end: KeePassXC changes the database in the prompt), or at once
/// after quiet. No write goes "at once within the same burst": that would need the second write's
/// change to be served before KeePassXC's 150 ms timer fires, which a loaded machine does not
/// promise (0.3.0's 50 ms burst window crashed KeePassXC under two busy cores: a forked child's
/// `store_secret` right after its ID was minted). One at a time holds for every process of the
/// user: a write holds a record lock on `$XDG_RUNTIME_DIR/deviceid-keepassxc` from its wait to its
/// end, and leaves there the CLOCK_MONOTONIC millisecond it ended. Writes by other programs are not
/// seen: a crash they cause is KeePassXC's (keepassxreboot/keepassxc#13265).
enum KeePassXCSaves {
    /// How long after a write ended KeePassXC's save of it is surely over: the 150 ms timer, a key
    /// derivation of KeePassXC's default 1 s, and the writing out.
    static let settleMilliseconds = 2000

    /// The least time a write needs after its wait: a wait that leaves less is refused.
    static let writeBudgetMilliseconds = 100

    private static let threads = PThreadMutex()
    /// When this process's last write to KeePassXC ended (the record where the user has no
    /// runtime directory of their own).
    nonisolated(unsafe) private static var lastEnd: Int?
    private static let fileName = "deviceid-keepassxc"

    /// Runs `write` (one request to KeePassXC that changes its database, with its prompt) when no
    /// save of an earlier write can be under way, holding every other write of the user's DeviceID
    /// processes back until it ended. A wait that would pass `end` is `.timedOut`, before anything
    /// is sent. The write's end is recorded whether it succeeded or not: a request that failed on
    /// the way back may still have changed the database.
    static func write<T>(end: Int, _ write: () throws(DeviceIDError) -> T) throws(DeviceIDError) -> T {
        try threads.withLock(until: end - writeBudgetMilliseconds, "waiting for another write to KeePassXC") {
            () throws(DeviceIDError) -> T in
            let shared = try SharedRecord.open(until: end - writeBudgetMilliseconds)
            let now = Monotonic.milliseconds()
            var last = max(lastEnd ?? Int.min, shared?.read() ?? Int.min)
            // An end further ahead than any wait is another boot's or another clock's: none.
            if last != Int.min && last > now + settleMilliseconds { last = Int.min }
            let ready = last == Int.min ? now : max(now, last + settleMilliseconds)
            guard ready + writeBudgetMilliseconds <= end else {
                guard ready > now else {
                    throw DeviceIDError(.timedOut, "\(max(end - now, 0)) ms of the deadline are left, and a write to "
                        + "KeePassXC needs \(writeBudgetMilliseconds)")
                }
                throw DeviceIDError(.timedOut, "KeePassXC may still be saving a change made \(now - last) ms ago, "
                    + "and a write during its save crashes it: the write would have to wait \(ready - now) ms, "
                    + "past the deadline")
            }
            while true {
                let left = ready - Monotonic.milliseconds()
                guard left > 0 else { break }
                usleep(UInt32(min(left, 100)) * 1000)
            }
            // Where no runtime directory holds the record, a child forked during the write finds
            // this: it waits a save from the write's start at least.
            lastEnd = Monotonic.milliseconds()
            defer {
                let ended = Monotonic.milliseconds()
                lastEnd = ended
                shared?.write(ended)
            }
            return try write()
        }
    }

    /// Forgets every write, this process's and the user's record (tests that write to a scripted
    /// KeePassXC one after another, each starting from quiet).
    static func forgetWrites() {
        threads.withLock {
            lastEnd = nil
            if let shared = try? SharedRecord.open(until: Monotonic.milliseconds() + 1000) { shared.clear() }
        }
    }

    /// The user's record of the last write's end, locked while it is open (from a write's wait to
    /// its end; a record lock is the process's, so a child forked meanwhile does not hold it).
    private struct SharedRecord {
        let file: FileDescriptor

        /// nil without a runtime directory of the user's own (then the process's record alone
        /// counts); `.timedOut` when another process's write still held it at `end`.
        static func open(until end: Int) throws(DeviceIDError) -> SharedRecord? {
            guard let runtime = try? Environment.path("XDG_RUNTIME_DIR"), runtime.hasPrefix("/"),
                  case .success(let directory) = FileDescriptor.open(runtime, O_RDONLY | O_DIRECTORY | O_NOFOLLOW),
                  case .success(let st) = directory.status(), st.st_uid == geteuid(), st.st_mode & 0o077 == 0,
                  case .success(let file) = directory.open(KeePassXCSaves.fileName, O_RDWR | O_CREAT | O_NOFOLLOW,
                                                           mode: 0o600)
            else { return nil }
            while true {
                if case .success = file.tryLockForWriting() { return SharedRecord(file: file) }
                guard Monotonic.milliseconds() < end else {
                    throw DeviceIDError(.timedOut, "another process's write to KeePassXC was still under way at the "
                        + "deadline, and a write beside it could land in KeePassXC's save, which crashes it")
                }
                usleep(2000)
            }
        }

        func read() -> Int? {
            var buffer = [UInt8](repeating: 0, count: 24)
            let count = buffer.withUnsafeMutableBytes { pread(file.rawValue, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            var value = 0
            for byte in buffer[..<count] {
                guard byte >= 0x30 && byte <= 0x39, value < Int.max / 10 - 9 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            return value
        }

        func clear() { _ = ftruncate(file.rawValue, 0) }

        func write(_ value: Int) {
            let bytes = Array(String(value).utf8)
            guard ftruncate(file.rawValue, 0) == 0 else { return }
            _ = bytes.withUnsafeBytes { pwrite(file.rawValue, $0.baseAddress, $0.count, 0) }
        }
    }
}

extension KeePassXCSaves {
    /// Its lazily made locks, made before fork() (`LazyGlobals`).
    static func settleLazyGlobals() { _ = threads }
}
