import CDeviceIDLibc

/// The file type bits of a `stat`, compared the same way in both builds (the C macros come in as
/// `Int32`, `st_mode` as `mode_t`).
extension stat {
    private var type: mode_t { st_mode & mode_t(S_IFMT) }
    var isRegularFile: Bool { type == mode_t(S_IFREG) }
    var isSymbolicLink: Bool { type == mode_t(S_IFLNK) }
    var isSocket: Bool { type == mode_t(S_IFSOCK) }
    var isSticky: Bool { st_mode & mode_t(S_ISVTX) != 0 }
}
