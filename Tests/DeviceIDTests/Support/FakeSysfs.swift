import Foundation

/// A sysfs tree of network interfaces, for the policy of choosing among them. The attributes are
/// the ones the kernel exposes in /sys/class/net/X; the addresses of such fake interfaces are
/// read from `address` (the ethtool ioctl finds no interface of that name).
final class FakeSysfs {
    let directory = TemporaryDirectory()
    var root: String { directory.path }

    struct Interface {
        var name: String
        var address: String
        var type = "1"
        var hasDevice = true
        var assignType = "0"
        var extra: [String] = []
    }

    func add(_ interface: Interface) throws {
        let dir = root + "/class/net/" + interface.name
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try (interface.address + "\n").write(toFile: dir + "/address", atomically: false, encoding: .utf8)
        try (interface.type + "\n").write(toFile: dir + "/type", atomically: false, encoding: .utf8)
        try (interface.assignType + "\n").write(toFile: dir + "/addr_assign_type", atomically: false, encoding: .utf8)
        if interface.hasDevice { try FileManager.default.createDirectory(atPath: dir + "/device", withIntermediateDirectories: true) }
        for name in interface.extra { try FileManager.default.createDirectory(atPath: dir + "/" + name, withIntermediateDirectories: true) }
    }
}
