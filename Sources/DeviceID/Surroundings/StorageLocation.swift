/// Where an identifier lives, and so what takes it away. The raw values are the C ABI's
/// `DEVICEID_LOCATION_*`.
public enum StorageLocation: Int32, Sendable, CaseIterable, CustomStringConvertible {
    /// The user's Secret Service (keyring): outlives the app, its data and any container.
    case keyring = 1
    /// Derived from the Secret portal's secret for this sandboxed app, which the host's keyring
    /// keeps: outlives the app's data; nothing to remove in the sandbox.
    case portal = 2
    /// Files in the sandboxed app's own data (`~/.var/app/ID`, `SNAP_USER_DATA`): removed with it.
    case appData = 3
    /// Files on this machine, outside any container and any app's data.
    case host = 4
    /// Files in the container's own file system (its writable layer) or a tmpfs: removed with the
    /// container (`docker rm`).
    case container = 5
    /// Files in a volume mounted into the container: outlive the container.
    case volume = 6
    /// Files in a directory of the host bound into the container: outlive the container.
    case bindMount = 7
    /// Files in a container whose mount table could not be read whole (`/proc` not mounted, or a
    /// table beyond `MountTable.readLimit`): which mount holds them, and so whether they outlive
    /// the container, cannot be told. Not promised to outlive it.
    case undetermined = 8

    public var description: String { staticName.description }

    /// The name in static storage ("keyring", "portal", "app-data", …), for C callers and JSON.
    public var staticName: StaticString {
        switch self {
        case .keyring: "keyring"
        case .portal: "portal"
        case .appData: "app-data"
        case .host: "host"
        case .container: "container"
        case .volume: "volume"
        case .bindMount: "bind-mount"
        case .undetermined: "undetermined"
        }
    }

    /// Whether an ID here outlives removal of the app's data (`flatpak uninstall --delete-data`,
    /// `snap remove`).
    public var survivesAppDataRemoval: Bool { self != .appData }

    /// Whether an ID here outlives removal of the container (`docker rm`).
    public var survivesContainerRemoval: Bool { self != .container && self != .undetermined }

    /// Where files in `directory` live, in these surroundings.
    static func ofFiles(in directory: String, _ surroundings: Surroundings, mounts: MountTable) -> StorageLocation {
        let path = MountTable.resolved(directory)
        if let sandbox = surroundings.sandbox,
           sandbox.appDataDirectories.contains(where: { MountTable.contains(MountTable.resolved($0), path) }) {
            return .appData
        }
        guard surroundings.container != nil else { return .host }
        // A table not read whole may list the mount that holds the path after where it was cut:
        // then nothing can be said of where the files are, and no label is given.
        guard mounts.complete else { return .undetermined }
        guard let mount = mounts.mount(holding: path), mount.mountPointBytes != MountTable.slash else { return .container }
        // A tmpfs or an overlay lives in memory or in the container's layers: the container's own
        // when the container has it whole (its root, its --tmpfs, or a directory of either bound
        // elsewhere inside). A directory of one it does not have whole came from the host (its
        // /tmp or /run, a nested container's root) and outlives the container like any bind mount.
        let memoryOrLayers = ["tmpfs", "overlay", "fuse.fuse-overlayfs"].contains(mount.fileSystem)
        if memoryOrLayers, mounts.showsWhole(mount) { return .container }
        // Docker's and Podman's named volumes are directories `…/volumes/NAME/_data` of the host.
        if mount.root.includes("/volumes/") && mount.root.hasSuffix("/_data") { return .volume }
        // A whole file system (a block device, a volume driver's) rather than a directory of one.
        if mount.isRoot { return .volume }
        return .bindMount
    }
}
