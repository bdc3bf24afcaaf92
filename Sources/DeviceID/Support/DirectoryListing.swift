import CDeviceIDLibc

/// The names in a directory stream.
///
/// `readdir` returns records only as long as their name: copying `entry.pointee` (a full
/// `struct dirent`) reads past the end of the last record in the kernel buffer. Found by
/// AddressSanitizer under Tests/stress/hammer.py; the name is read through a pointer instead.
enum DirectoryListing {
    static func names(_ stream: OpaquePointer) -> [String] {
        var names = [String]()
        while let entry = readdir(stream) {
            let name = String(cString: dids_dirent_name(entry))
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
