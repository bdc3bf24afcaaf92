/// The library's lazily made locks, made (or another thread's making of them waited for) before
/// fork(): Swift makes a global under swift_once, and a child forked while another thread was
/// inside one finds it in progress for good — its own first call spins there (measured: a child
/// spinning in swift_once for `Surroundings.detected`, forked during another thread's first seal;
/// 1 run in 3 to 15 of Tests/python/test_fork.py's sealing case). The C entry points run this in
/// a prepare handler (`dids_fork_settle`), beside `DeviceIdentity.shared`. Each is an empty lock.
/// (The Embedded build's own `swift_once`, fork_aware_once.c, lets such a child take the making
/// over; this is for the normal build, whose runtime's `swift_once` does not.)
@_spi(CEntryPoints) public enum LazyGlobals {
    public static func settle() {
        MachineID.settleLazyGlobals()
        Redaction.settleLazyGlobals()
        SandboxAnchor.settleLazyGlobals()
        Surroundings.settleLazyGlobals()
        KeePassXCSaves.settleLazyGlobals()
        GDBusTransport.settleLazyGlobals()
        LibDBusTransport.settleLazyGlobals()
        FileStore.settleLazyGlobals()
        SessionLock.settleLazyGlobals()
    }
}
