import CDeviceIDLibc

/// The container this process runs in, if any, and what that means for the machine ID.
/// Detection follows systemd's `systemd-detect-virt --container`: `/run/systemd/container` (which
/// systemd writes from PID 1's `container=`), Docker's `/.dockerenv`, Podman's
/// `/run/.containerenv`, PID 1's `container=` itself, and last "container-other": PID and cgroup
/// namespaces of its own over an image's layers (an overlay with a writable upper layer at "/"),
/// which is what Kubernetes and containerd, leaving no marker, give. systemd 256 and later call
/// any PID namespace "container-other"; DeviceID wants the rest too, because what a container
/// implies here (an image's machine ID, files gone with it) is not true of a PID namespace over
/// the host's own root (`unshare --pid`, a service's `PrivatePIDs=`), even where that root is an
/// overlay (composefs on Fedora Atomic and bootc hosts, a live system).
public struct Container: Sendable, Equatable {
    /// The container manager in systemd's words: "docker", "podman", "systemd-nspawn", "lxc",
    /// "lxc-libvirt", "wsl", "proot", "pouch", "rkt", or "container-other".
    public let manager: String

    /// `pidNamespace`: whether namespaces over an image's layers, without any manager's marker,
    /// count. Not inside a Flatpak or Snap sandbox, whose own namespaces they are (the sandbox is
    /// what matters there).
    static func detect(pidNamespace: Bool = true, mounts: () -> MountTable = MountTable.current) -> Container? {
        if let text = SystemFile.text("/run/systemd/container", limit: 256) {
            let name = text.split(separator: "\n").first.map { String($0).trimmingSpaces() } ?? ""
            if !name.isEmpty { return Container(manager: name) }
        }
        if SystemFile.exists("/.dockerenv") { return Container(manager: "docker") }
        if SystemFile.exists("/run/.containerenv") { return Container(manager: "podman") }
        // PID 1's environment is readable to root and to PID 1's own user.
        if let environ = SystemFile.text("/proc/1/environ", limit: 65536) {
            for entry in environ.split(separator: "\u{0}") where entry.hasPrefix("container=") {
                let name = String(entry.dropFirst(10))
                if !name.isEmpty { return Container(manager: name == "oci" ? "container-other" : name) }
            }
        }
        if pidNamespace, inOtherPIDNamespace(), inOwnCgroupNamespace(SystemFile.text("/proc/self/cgroup", limit: 65536) ?? ""),
           hasImageRoot(mounts()) {
            return Container(manager: "container-other")
        }
        return nil
    }

    /// Whether "/" is an image's layers under a writable one: an overlay with `upperdir=` (a
    /// composefs root has lower layers only).
    static func hasImageRoot(_ mounts: MountTable) -> Bool {
        guard let root = mounts.mount(at: "/"), root.fileSystem == "overlay" else { return false }
        return root.superOptions.split(separator: ",").contains { $0.hasPrefix("upperdir=") }
    }

    /// Whether `/proc/self/cgroup` (its text given) shows every hierarchy at its root: a cgroup
    /// namespace of its own, as container runtimes make on cgroup v2. On a host even a service
    /// sits below the root ("0::/system.slice/x.service").
    static func inOwnCgroupNamespace(_ cgroups: String) -> Bool {
        let lines = cgroups.split(separator: "\n")
        return !lines.isEmpty && lines.allSatisfy { $0.hasSuffix(":/") }
    }

    /// The kernel's first PID namespace has a fixed inode, PROC_PID_INIT_INO (linux/proc_ns.h);
    /// systemd's namespace_is_init() compares /proc/self/ns/pid's with it. Unknown (no /proc,
    /// no such link) is not a container.
    static func inOtherPIDNamespace() -> Bool {
        var st = stat()
        guard stat("/proc/self/ns/pid", &st) == 0 else { return false }
        return st.st_ino != 0xEFFF_FFFC
    }

    /// When the container started: the start of PID 1 of this PID namespace, in seconds since
    /// the epoch (`/proc/1/stat` field 22, ticks after boot, plus `btime` of `/proc/stat`).
    static func startTime() -> Int64? {
        // With the host's PID namespace (`docker run --pid=host`) PID 1 is the host's init, whose
        // start says nothing about the container. Signs of that: another mount namespace (when
        // PID 1's is readable at all: a container's root may not read its own init's), or a
        // cgroup outside this process's cgroup namespace ("0::/../../init.scope").
        if let mine = namespace("/proc/self/ns/mnt"), let first = namespace("/proc/1/ns/mnt"), mine != first { return nil }
        if let cgroups = SystemFile.text("/proc/1/cgroup", limit: 65536),
           cgroups.split(separator: "\n").contains(where: { String($0).includes(":/..") }) {
            return nil
        }
        guard let stat = SystemFile.text("/proc/1/stat", limit: 4096),
              let close = stat.utf8.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        let rest = stat[stat.index(after: String.Index(close, within: stat)!)...]
        let fields = rest.split(separator: " ", omittingEmptySubsequences: true)
        // fields[0] is field 3 (state); field 22 (starttime) is fields[19].
        guard fields.count > 19, let ticks = Int64(fields[19]) else { return nil }
        guard let proc = SystemFile.text("/proc/stat", limit: 1 << 20) else { return nil }
        var boot: Int64?
        for line in proc.split(separator: "\n") where line.hasPrefix("btime ") {
            boot = Int64(String(line.dropFirst(6)).trimmingSpaces())
        }
        let hertz = Int64(sysconf(Int32(_SC_CLK_TCK)))
        guard let boot, hertz > 0 else { return nil }
        return boot + ticks / hertz
    }

    private static func namespace(_ link: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 64)
        let count = readlink(link, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
