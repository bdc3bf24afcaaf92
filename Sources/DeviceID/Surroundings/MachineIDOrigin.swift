import CDeviceIDLibc

/// Whether the machine ID is this machine's own. On a host it is (systemd writes it on first
/// boot). In a container it is the manager's choice: systemd-nspawn, and Podman with `--systemd`,
/// make one per container (systemd in the container writes it, or mounts a transient one, at its
/// start); Docker never does, so `/etc/machine-id` is whatever the image was built with, and every
/// container made from the image shares it. Such an ID is weak: the app-specific machine ID is
/// the same in all of them, and clone detection cannot tell them apart.
public struct MachineIDOrigin: Sendable, Equatable {
    /// Not known to be made for this machine or container alone.
    public let weak: Bool
    /// Why, in words (with the file and the dates compared).
    public let detail: String

    init(weak: Bool, detail: Words) {
        self.weak = weak
        self.detail = detail.text
    }

    static func assess(container: Container?, mounts: () -> MountTable) -> MachineIDOrigin {
        let path = MachineID.pathInUse()
        // On a host the mounts are not needed: read only in a container.
        guard container != nil else { return assess(path, container: nil, mounts: MountTable(parsing: ""), started: { nil }) }
        return assess(path, container: container, mounts: mounts(), started: Container.startTime)
    }

    /// The rules, with the machine-ID file, the container, its mounts and its start given (tests).
    static func assess(_ path: String?, container: Container?, mounts: MountTable,
                       started: () -> Int64?) -> MachineIDOrigin {
        guard let path else {
            return MachineIDOrigin(weak: true, detail: "no machine ID can be read: IDs cannot be bound to this machine")
        }
        guard let container else { return MachineIDOrigin(weak: false, detail: "\(path), this machine's own") }
        let kind: Words = "a \(container.manager) container"
        if let mount = mounts.mount(at: path) {
            if mount.fileSystem == "tmpfs" {
                return MachineIDOrigin(weak: false, detail: "\(path) is a transient file made when \(kind) started")
            }
            // The host's own file, under whatever prefix its file system gives it (a btrfs
            // subvolume's /@/etc/machine-id, an ostree deployment's).
            if mount.root.hasSuffix("/etc/machine-id") || mount.root.hasSuffix("/var/lib/dbus/machine-id") {
                return MachineIDOrigin(weak: true, detail: "\(path) in \(kind) is the host's machine ID, bind-mounted: "
                                       + "the same on the host and in every container that mounts it")
            }
            return MachineIDOrigin(weak: false, detail: "\(path) is bind-mounted into \(kind) from \(mount.root)")
        }
        var st = stat()
        guard stat(path, &st) == 0, let started = started() else {
            return MachineIDOrigin(weak: true, detail: "\(path) in \(kind): cannot tell whether the container manager "
                                   + "made it for this container")
        }
        let written = Int64(st.st_mtim.tv_sec)
        // The start is known to a second (btime is rounded down): a few seconds of slack.
        if written >= started - 5 {
            return MachineIDOrigin(weak: false, detail: "\(path) was written when \(kind) started: made for this container")
        }
        return MachineIDOrigin(weak: true, detail: "\(path) in \(kind) predates the container (written "
                               + "\(WallClock.utcText(written)), the container started \(WallClock.utcText(started))): "
                               + "baked into the image, so every container made from it has the same machine ID")
    }
}
