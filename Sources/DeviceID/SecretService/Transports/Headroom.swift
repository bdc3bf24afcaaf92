import CDeviceIDLibc

/// Resources a conversation with the Secret Service needs, checked before GLib is given control:
/// GLib and libgcrypt abort the whole process when they run out of file descriptors (measured:
/// "Creating pipes for GWakeup: Too many open files" then SIGTRAP with `ulimit -n` 6–9, libgcrypt's
/// "FATAL: error reading /proc/sys/crypto/fips_enabled" then SIGABRT at 10–11), and GLib when it
/// cannot start its D-Bus thread ("creating thread 'gdbus'", SIGTRAP, with `ulimit -v 50000`).
/// A library must fail the call instead.
enum Headroom {
    /// Free descriptors a keyring conversation needs, with a margin for the file store's work on
    /// the other thread meanwhile.
    static let keyringDescriptors = 12

    /// Throws `.io` unless `count` more descriptors can be opened now.
    static func requireDescriptors(_ count: Int, for purpose: String) throws(DeviceIDError) {
        var taken = [FileDescriptor]()  // closed when this returns
        taken.reserveCapacity(count)
        for _ in 0..<count {
            switch FileDescriptor.open("/dev/null", O_RDONLY) {
            case .success(let fd):
                taken.append(fd)
            case .failure(let failure) where failure.rawValue == EMFILE || failure.rawValue == ENFILE:
                throw DeviceIDError(.io, "too few free file descriptors for \(purpose): it needs about \(count) "
                    + "(only \(taken.count) could be opened); raise the limit (ulimit -n)")
            case .failure(let failure):
                // Not a shortage: /dev/null itself is missing or unusable (a bare chroot or container).
                throw failure.error("open", "/dev/null (needed to count free file descriptors for \(purpose))")
            }
        }
    }

    /// Threads GLib may start during a conversation: its D-Bus worker ("gdbus"), its worker
    /// context ("gmain") and a prompt worker.
    static let keyringThreads = 3

    /// Throws `.noMemory` unless the address space has room for `threads` more thread stacks of
    /// the default size and some heap: reserved (not committed) and released at once.
    static func requireAddressSpace(threads: Int, for purpose: String) throws(DeviceIDError) {
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_STACK.rawValue), &limit)
        let eightMiB = 8 << 20
        let stack = limit.rlim_cur > rlim_t(64 << 20) ? eightMiB : max(Int(limit.rlim_cur), 1 << 20)  // RLIM_INFINITY is the largest value
        let size = stack * threads + (16 << 20)
        let region = mmap(nil, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
        guard let region, region != UnsafeMutableRawPointer(bitPattern: -1) else {  // MAP_FAILED
            throw DeviceIDError(.noMemory, "too little address space for \(purpose): it needs about "
                + "\(size >> 20) MiB for \(threads) threads; raise the limit (ulimit -v)")
        }
        munmap(region, size)
    }

    /// Throws `.noMemory` unless `count` more threads can run at once now: they are started,
    /// held until all exist, then ended. GLib cannot fail a thread it needs ("creating thread
    /// 'gdbus'" ends the process with SIGTRAP at a `ulimit -u` or `pids.max` just above the task
    /// count, measured), so the process limit is asked before GLib is.
    static func requireThreads(_ count: Int, for purpose: String) throws(DeviceIDError) {
        let gate = PThreadMutex()
        var started = [Threads.Joinable]()
        var failure: Int32 = 0
        gate.withLock {
            for _ in 0..<count {
                guard let thread = Threads.start({ gate.withLock {} }) else {
                    failure = errno
                    break
                }
                started.append(thread)
            }
        }
        for thread in started { thread.join() }
        guard started.count == count else {
            let reason = String(cString: strerror(failure))
            throw DeviceIDError(.noMemory, "cannot start the \(count) threads \(purpose) needs (\(reason); "
                + "only \(started.count) could be started): the process or container limit on tasks is reached "
                + "(ulimit -u, pids.max)")
        }
    }
}
