import Glibc

/// The names in a directory stream.
///
/// `readdir` returns records only as long as their name: copying `entry.pointee` (a full
/// `struct dirent`) reads past the end of the last record in the kernel buffer. Found by
/// AddressSanitizer under Tests/stress/hammer.py; the name is read through a pointer instead.
enum DirectoryListing {
    static func names(_ stream: OpaquePointer) -> [String] {
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        var names = [String]()
        while let entry = readdir(stream) {
            let name = String(cString: (UnsafeRawPointer(entry) + nameOffset).assumingMemoryBound(to: CChar.self))
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
