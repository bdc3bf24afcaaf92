/// Where this process runs — a host session, a Flatpak or Snap sandbox, a container — and what
/// that means for the identifiers it keeps (docs/ENVIRONMENTS.md "Sandboxes and containers").
/// Detected once per process: none of it changes while a process runs.
public struct Surroundings: Sendable, Equatable {
    /// The raw values are the C ABI's `DEVICEID_ENVIRONMENT_*`.
    public enum Kind: Int32, Sendable, CustomStringConvertible {
        case host = 1, flatpak = 2, snap = 3, container = 4

        public var description: String { staticName.description }

        public var staticName: StaticString {
            switch self {
            case .host: "host"
            case .flatpak: "flatpak"
            case .snap: "snap"
            case .container: "container"
            }
        }
    }

    /// A sandbox wins over a container it may run in: it decides what the app can reach.
    public let kind: Kind
    public let sandbox: Sandbox?
    public let container: Container?

    /// Whether the machine ID is this machine's (or container's) own; assessed once per machine-ID
    /// file, as `MachineID` reads each once.
    public var machineID: MachineIDOrigin {
        let path = MachineID.pathInUse() ?? ""
        if let known = Self.origins.withLock({ $0[path] }) { return known }
        let origin = MachineIDOrigin.assess(container: container, mounts: Self.mounts)
        Self.origins.withLock { $0[path] = origin }
        return origin
    }

    private static let origins = Locked<[String: MachineIDOrigin]>([:])

    /// The Flatpak app id, the snap's name, the container manager; "" on a host.
    public var name: String {
        if let sandbox { return sandbox.name }
        return container?.manager ?? ""
    }

    private static let detected = Locked<Surroundings?>(nil)

    /// The surroundings of this process.
    public static func current() -> Surroundings {
        if let known = detected.withLock({ $0 }) { return known }
        let sandbox = Sandbox.detect()
        let container = Container.detect(pidNamespace: sandbox == nil, mounts: Self.mounts)
        let kind: Kind = switch sandbox {
        case .flatpak: .flatpak
        case .snap: .snap
        case nil: container == nil ? .host : .container
        }
        let found = Surroundings(kind: kind, sandbox: sandbox, container: container)
        detected.withLock { $0 = found }
        return found
    }

    /// Where files kept in `directory` live here. On a host, outside any sandbox: the host, with
    /// nothing to read.
    func location(ofFilesIn directory: String) -> StorageLocation {
        guard sandbox != nil || container != nil else { return .host }
        return StorageLocation.ofFiles(in: directory, self, mounts: Self.mounts())
    }

    private static let mountTable = Locked<MountTable?>(nil)

    /// This process's mounts, read once (the first answer's location and the machine ID's origin
    /// both need them; what is mounted where does not change under a running app).
    static func mounts() -> MountTable {
        if let known = mountTable.withLock({ $0 }) { return known }
        let table = MountTable.current()
        mountTable.withLock { $0 = table }
        return table
    }
}

extension Surroundings {
    /// Its lazily made locks, made before fork() (`LazyGlobals`).
    static func settleLazyGlobals() { _ = origins; _ = detected; _ = mountTable }
}
