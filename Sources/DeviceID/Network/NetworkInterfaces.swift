import CDeviceIDSystem
import CDeviceIDLibc

/// Finds the primary hardware address among the network interfaces in sysfs.
///
/// Candidates are the interfaces backed by a device (`/sys/class/net/X/device` exists) of
/// Ethernet type, except bridges, bonds and tun/tap — so not `lo`, `veth*`, `docker*`, `virbr*`.
/// Each one's permanent address (ETHTOOL_GPERMADDR) is preferred over its current one. Unusable
/// addresses (zero, broadcast, multicast, 02:00:00:00:00:00) are skipped. The choice does not
/// depend on enumeration order: universally administered before locally administered, then
/// permanent before current, then the interface name in byte order.
///
/// The sysfs root is `/sys` unless `DEVICEID_SYSFS_ROOT` says otherwise (tests build one).
public enum NetworkInterfaces {
    public static func primaryAddress(interface: String? = nil, sysfsRoot: String? = nil) throws(DeviceIDError) -> MACAddress {
        let root = try Environment.sysfs(sysfsRoot) + "/class/net"
        if let interface {
            try validate(interface)
            guard SystemFile.exists(root + "/" + interface) else {
                throw DeviceIDError(.notFound, "no network interface '\(interface)'")
            }
            guard let address = address(of: interface, in: root) else {
                throw DeviceIDError(.notFound, "interface '\(interface)' has no usable hardware address")
            }
            return address
        }
        var candidates = [MACAddress]()
        for name in try names(in: root) where isHardware(name, in: root) {
            if let address = address(of: name, in: root) { candidates.append(address) }
        }
        let ordered = candidates.ordered { a, b in
            if a.isWeak != b.isWeak { return !a.isWeak }
            if a.isPermanent != b.isPermanent { return a.isPermanent }
            return Array(a.interface.utf8).lexicographicallyPrecedes(Array(b.interface.utf8))
        }
        guard let first = ordered.first else {
            throw DeviceIDError(.notFound, "no hardware network interface with a usable address")
        }
        return first
    }

    /// Interface names: 1 to 15 bytes (IFNAMSIZ - 1), no '/', not "." or "..".
    package static func validate(_ name: String) throws(DeviceIDError) {
        let utf8 = name.utf8
        guard !utf8.isEmpty, utf8.count < 16, !name.contains("/"), name != ".", name != "..",
              !utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F })
        else {
            throw DeviceIDError(.invalidArgument, "'\(name)' is not a network interface name")
        }
    }

    private static func names(in root: String) throws(DeviceIDError) -> [String] {
        guard let dir = opendir(root) else { throw SystemCall.error("cannot list", root) }
        defer { closedir(dir) }
        return DirectoryListing.names(dir)
    }

    private static func isHardware(_ name: String, in root: String) -> Bool {
        let dir = root + "/" + name
        guard name != "lo", SystemFile.attribute(dir + "/type") == "1", SystemFile.exists(dir + "/device") else {
            return false
        }
        return !["bridge", "bonding", "tun_flags"].contains { SystemFile.exists(dir + "/" + $0) }
    }

    private static func address(of name: String, in root: String) -> MACAddress? {
        var permanent = [UInt8](repeating: 0, count: 32)
        // The ioctl reaches the interface of that name in this network namespace: ask it only when
        // the sysfs entry describes that same interface (a test's sysfs tree may not).
        let sameInterface = SystemFile.attribute(root + "/" + name + "/ifindex") == String(if_nametoindex(name))
        let length = sameInterface
            ? permanent.withUnsafeMutableBufferPointer { dids_permanent_address(name, $0.baseAddress, $0.count) }
            : 0
        if length == 6, MACAddress.isUsable(Array(permanent.prefix(6))) {
            return MACAddress(bytes: Array(permanent.prefix(6)), interface: name, isPermanent: true)
        }
        guard let text = SystemFile.attribute(root + "/" + name + "/address"),
              let current = MACAddress(parsing: text, interface: name),
              MACAddress.isUsable(current.bytes)
        else { return nil }
        // addr_assign_type 0 (NET_ADDR_PERM): the kernel says the current address is the permanent one.
        let permanentNow = SystemFile.attribute(root + "/" + name + "/addr_assign_type") == "0"
        return MACAddress(bytes: current.bytes, interface: name, isPermanent: permanentNow)
    }
}
