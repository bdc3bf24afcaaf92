import CDeviceIDLibc

/// No write reaches KeePassXC while it saves an earlier one: the write discipline that keeps a
/// user's KeePassXC from crashing because of how DeviceID talks to it.
///
/// What crashes it (KeePassXC 2.7.4, Debian 12; 2.7.10 crashes the same way): with "save after
/// every change" (its default), the first change arms a 150 ms timer; then `Database::saveAs`
/// serializes the database on a pooled thread (`AsyncTask::runAndWaitForFuture`) while the main
/// thread waits in a nested event loop that keeps serving D-Bus. A `CreateItem` or `Item.Delete`
/// served there changes the entry tree the pooled thread is writing out, which then dies with
/// SIGSEGV in `QUuid::toRfc4122()`. Reads do not (measured: docs/ENVIRONMENTS.md, "KeePassXC").
/// The save lasts as long as the database's key derivation (about 1 s for a database made with
/// KeePassXC's defaults) plus the writing out.
///
/// So a write goes at once when no DeviceID write to KeePassXC began a burst in the last
/// `settle` ms, or when it comes within `burst` ms of that burst's first write (KeePassXC has not
/// begun saving yet); otherwise it waits until `settle` ms after the burst began. The burst is
/// kept per process and, for every process of the user, in `$XDG_RUNTIME_DIR/deviceid-keepassxc`
/// (the CLOCK_MONOTONIC millisecond at which the burst began, under a record lock). Writes by other
/// programs are not seen: a crash they cause is KeePassXC's (keepassxreboot/keepassxc#13265).
enum KeePassXCSaves {
    /// How long after a burst's first write another write may follow at once: KeePassXC begins its
    /// save 150 ms after the first change, which comes a little after the request that makes it.
    static let burstMilliseconds = 50
    /// How long after a burst's first write its save is surely over: the 150 ms timer, a key
    /// derivation of KeePassXC's default 1 s, and the writing out.
    static let settleMilliseconds = 2000

    private static let threads = PThreadMutex()
    nonisolated(unsafe) private static var burstStart: Int?
    private static let fileName = "deviceid-keepassxc"

    /// The least time a write needs after its wait: a wait that leaves less is refused.
    static let writeBudgetMilliseconds = 100

    /// Waits, if a write now could land in KeePassXC's save of an earlier one, and counts this
    /// write in its burst. A wait that would pass `end` is `.timedOut`, before anything is sent.
    /// The locks are held only to decide: a writer that must wait records the moment it will
    /// write as the next burst's start (others then join that burst or wait for it), and sleeps
    /// without them.
    static func beforeWrite(end: Int) throws(DeviceIDError) {
        let ready = try threads.withLock(until: end, "waiting for another write to KeePassXC") { () throws(DeviceIDError) -> Int in
            let shared = SharedBurst(until: end)
            let now = Monotonic.milliseconds()
            var start = max(burstStart ?? Int.min, shared?.read() ?? Int.min)
            // A start further ahead than any wait is another boot's or another clock's: no burst.
            if start != Int.min && start > now + settleMilliseconds { start = Int.min }
            let ready: Int
            if start == Int.min || now - start >= settleMilliseconds {
                ready = now                               // quiet: this write begins a burst
            } else if start >= now {
                ready = start                             // a burst about to begin: join it then
            } else if now - start < burstMilliseconds {
                return now                                // inside the burst: KeePassXC has not begun saving
            } else {
                ready = start + settleMilliseconds        // inside the save window: after it
            }
            guard ready + writeBudgetMilliseconds <= end else {
                // Quiet (no burst: start is Int.min, whose distance to now is no number), with less
                // of the deadline left than a write needs.
                guard ready > now, start != Int.min else {
                    throw DeviceIDError(.timedOut, "\(max(end - now, 0)) ms of the deadline are left, and a write to "
                        + "KeePassXC needs \(writeBudgetMilliseconds)")
                }
                throw DeviceIDError(.timedOut, "KeePassXC may still be saving a change made \(max(now - start, 0)) ms "
                    + "ago, and a write during its save crashes it: the write would have to wait "
                    + "\(ready - now) ms, past the deadline")
            }
            burstStart = ready
            shared?.write(ready)
            return ready
        }
        while true {
            let left = ready - Monotonic.milliseconds()
            guard left > 0 else { break }
            usleep(UInt32(min(left, 100)) * 1000)
        }
    }

    /// After a write's reply (or its prompt's end): KeePassXC changed the database then, not when
    /// the request was sent (its prompts may wait for a person). A change later than the burst's
    /// window begins a burst of its own, whose save is then waited for.
    static func afterWrite() {
        threads.withLock {
            let shared = SharedBurst(until: Monotonic.milliseconds() + 1000)
            let now = Monotonic.milliseconds()
            let start = max(burstStart ?? Int.min, shared?.read() ?? Int.min)
            guard start == Int.min || start > now + settleMilliseconds || now - start >= burstMilliseconds else { return }
            burstStart = now
            shared?.write(now)
        }
    }

    /// Forgets every burst, this process's and the user's record (tests that write to a scripted
    /// KeePassXC one after another, each starting from quiet).
    static func forgetBursts() {
        threads.withLock {
            burstStart = nil
            if let shared = SharedBurst(until: Monotonic.milliseconds() + 1000) { shared.clear() }
        }
    }

    /// The user's record of the burst, locked while it is open; nil without a runtime directory
    /// of the user's own (then the process's record alone counts).
    private struct SharedBurst {
        let file: FileDescriptor

        init?(until end: Int) {
            guard let runtime = Environment.value("XDG_RUNTIME_DIR"), runtime.hasPrefix("/"),
                  case .success(let directory) = FileDescriptor.open(runtime, O_RDONLY | O_DIRECTORY | O_NOFOLLOW),
                  case .success(let st) = directory.status(), st.st_uid == geteuid(), st.st_mode & 0o077 == 0,
                  case .success(let file) = directory.open(KeePassXCSaves.fileName, O_RDWR | O_CREAT | O_NOFOLLOW,
                                                           mode: 0o600)
            else { return nil }
            while true {
                if case .success = file.tryLockForWriting() { break }
                guard Monotonic.milliseconds() < end else { return nil }
                usleep(2000)
            }
            self.file = file
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
