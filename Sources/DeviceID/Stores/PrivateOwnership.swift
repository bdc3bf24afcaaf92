import Glibc

/// The rule for everything in the file store: owned by the effective user, writable by nobody
/// else. Read bits for group and others are removed rather than refused — tightening one's own
/// file is always safe — by setting `privateMode` on the open descriptor.
enum PrivateOwnership {
    static func enforce(_ st: stat, path: String, fd: Int32, privateMode: mode_t) throws(DeviceIDError) {
        guard st.st_uid == geteuid() else {
            throw DeviceIDError(.permission, "\(path) is owned by uid \(st.st_uid), not by uid \(geteuid())")
        }
        guard st.st_mode & 0o022 == 0 else {
            throw DeviceIDError(.permission,
                                "\(path) is writable by group or others (mode \(String(st.st_mode & 0o7777, radix: 8)))")
        }
        if st.st_mode & 0o077 != 0 && fchmod(fd, privateMode) != 0 {
            throw SystemCall.error("cannot restrict mode of", path)
        }
    }
}
