import CDeviceIDLibc

extension FileStore {
    /// `doctor`'s check of the file store, changing nothing: an existing directory must pass the
    /// same checks as a call and be writable; a missing one must be creatable (its nearest
    /// existing ancestor writable by this user).
    /// Whether the store can be used, and what `doctor` says of it.
    func diagnose() -> (ok: Bool, detail: Words) {
        do {
            if let directory = try StoreDirectory.open(path: path, create: false) {
                guard case .success(let st) = directory.descriptor.status() else {
                    return (false, "\(path) cannot be examined")
                }
                let writable = directory.descriptor.isAccessible(".", W_OK)
                let mode = String(st.st_mode & 0o7777, radix: 8)
                return (writable, "\(path) (owner uid \(st.st_uid), mode \(mode)\(writable ? "" : ", not writable"))")
            }
            var ancestor = path
            repeat {
                ancestor = ancestor.lastIndex(of: "/").map { String(ancestor[..<$0]) } ?? ""
            } while !ancestor.isEmpty && access(ancestor, F_OK) != 0
            let existing = ancestor.isEmpty ? "/" : ancestor
            if let missing = StoreDirectory.missingHome(under: path) {
                return (false, "\(path) cannot be created: \(missing); " + StoreDirectory.remedy)
            }
            guard faccessat(AT_FDCWD, existing, W_OK | X_OK, AT_EACCESS) == 0 else {
                return (false, "\(path) does not exist and cannot be created: \(existing) is not writable by uid "
                                 + "\(geteuid()); " + StoreDirectory.remedy)
            }
            return (true, "\(path) (not created yet; \(existing) is writable)")
        } catch {
            return (false, Words(error.description))
        }
    }
}
