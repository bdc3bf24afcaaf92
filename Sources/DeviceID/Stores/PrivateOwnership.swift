import CDeviceIDLibc

/// The rule for what the file store uses: owned by the effective user and writable by nobody
/// else. Nothing is ever chmodded: what DeviceID creates is created private (0700 directories,
/// 0600 files), and what it did not create is used as it is or refused with words saying how to
/// fix it. Readable by others is allowed (the names are hashes, and items are written 0600 and
/// replaced whole, so a loose mode is repaired by the next write of DeviceID's own file).
enum PrivateOwnership {
    static func check(_ st: stat, path: String) throws(DeviceIDError) {
        guard st.st_uid == geteuid() else {
            throw DeviceIDError(.permission, "\(path) is owned by uid \(st.st_uid), not by uid \(geteuid()); "
                + "use a directory of your own (\(Environment.storeDirectory))")
        }
        guard st.st_mode & 0o022 == 0 else {
            throw DeviceIDError(.permission,
                                "\(path) is writable by group or others (mode \(String(st.st_mode & 0o7777, radix: 8))); "
                                    + "run chmod go-w on it, or use another directory (\(Environment.storeDirectory))")
        }
    }
}
