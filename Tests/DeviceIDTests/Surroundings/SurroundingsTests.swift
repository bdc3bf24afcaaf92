@testable import DeviceID
import Foundation
import XCTest

/// Where the process runs, from the files the kernel and the sandbox managers write: mountinfo
/// lines, /.flatpak-info, machine-ID files with their dates. Each rule with its own input.
final class SurroundingsTests: XCTestCase {
    // proc(5)'s example line, a Docker overlay root, a named volume, a bind, a tmpfs, and a later
    // mount over the same point.
    private let mountinfo = """
        36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
        600 500 0:50 / / rw,relatime - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w
        601 600 8:1 /var/lib/docker/volumes/ids/_data /var/lib/deviceid rw,relatime - ext4 /dev/sda1 rw
        602 600 8:1 /srv/keep\\040me /data rw,relatime - ext4 /dev/sda1 rw
        603 600 0:60 / /run rw,nosuid - tmpfs tmpfs rw
        604 600 8:2 / /mnt/disk rw - xfs /dev/sdb rw
        605 600 8:1 /srv/first /over rw - ext4 /dev/sda1 rw
        606 600 8:1 /srv/second /over rw - ext4 /dev/sda1 rw
        607 600 0:61 /ids /srv/hosttmp rw - tmpfs tmpfs rw
        608 600 0:60 /deviceid /var/cache/ids rw - tmpfs tmpfs rw
        609 600 0:50 /data /var/lib/app rw - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w
        610 600 0:70 /var/lib/ids /var/lib/nested rw - overlay overlay rw,lowerdir=/l2,upperdir=/u2,workdir=/w2
        """

    func testMountinfoLinesAreParsedWithTheirEscapes() {
        let table = MountTable(parsing: mountinfo)
        XCTAssertEqual(table.mounts.count, 12)
        XCTAssertEqual(table.mounts[0], .init(device: "98:0", root: "/mnt1", mountPoint: "/mnt2", fileSystem: "ext3", source: "/dev/root",
                                              superOptions: "rw,errors=continue"))
        XCTAssertEqual(table.mount(at: "/data")?.root, "/srv/keep me")
        XCTAssertEqual(MountTable(parsing: "garbage\n1 2 3\n").mounts, [])
    }

    func testMountPathsAreBytesComparedByteForByte() {
        // 0xFE and 0xFF are two directories; as Strings both would be U+FFFD (issue 35, case 3).
        let table = MountTable(parsing: "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
            + "2 1 8:1 /srv/x\\376 /data/x\\376 rw - ext4 /dev/sda1 rw\n"
            + "3 1 8:1 /srv/caf\u{E9} /data/caf\u{E9} rw - ext4 /dev/sda1 rw\n")
        XCTAssertEqual(table.mounts[1].mountPointBytes, Array("/data/x".utf8) + [0xFE])
        XCTAssertEqual(table.mount(holding: Array("/data/x".utf8) + [0xFE, 0x2F, 0x61])?.rootBytes, Array("/srv/x".utf8) + [0xFE])
        XCTAssertEqual(table.mount(holding: Array("/data/x".utf8) + [0xFF])?.mountPoint, "/", "another directory")
        XCTAssertEqual(table.mount(holding: "/data/x\u{FFFD}")?.mountPoint, "/", "not the folded name either")
        // NFC café is a mount point; NFD café (e + U+0301) is another directory, though equal as Strings.
        XCTAssertEqual(table.mount(holding: "/data/caf\u{E9}/ids")?.root, "/srv/caf\u{E9}")
        XCTAssertEqual("/data/cafe\u{301}", "/data/caf\u{E9}", "Swift's String equality is canonical equivalence")
        XCTAssertEqual(table.mount(holding: "/data/cafe\u{301}/ids")?.mountPoint, "/")
    }

    func testATableNotReadWholeCannotLabelAStore() {
        let docker = Surroundings(kind: .container, sandbox: nil, container: Container(manager: "docker"))
        let cut = MountTable(parsing: Array(mountinfo.utf8), complete: false)
        XCTAssertEqual(StorageLocation.ofFiles(in: "/var/lib/deviceid", docker, mounts: cut), .undetermined,
                       "a table cut short may hide the mount that holds the store: no label")
        XCTAssertFalse(StorageLocation.undetermined.survivesContainerRemoval, "nothing promised")
        XCTAssertTrue(StorageLocation.undetermined.survivesAppDataRemoval)
        XCTAssertEqual(StorageLocation.ofFiles(in: "/var/lib/deviceid", docker, mounts: MountTable(parsing: mountinfo)), .volume)
    }

    func testThePathIsOnTheLongestMountPointAndTheLastMountThere() {
        let table = MountTable(parsing: mountinfo)
        XCTAssertEqual(table.mount(holding: "/var/lib/deviceid/x")?.mountPoint, "/var/lib/deviceid")
        XCTAssertEqual(table.mount(holding: "/var/lib/deviceidx")?.mountPoint, "/", "whole components only")
        XCTAssertEqual(table.mount(holding: "/over/a")?.root, "/srv/second")
        XCTAssertEqual(table.mount(holding: "/etc/machine-id")?.fileSystem, "overlay")
    }

    func testWhereFilesLiveInAContainerAndOnAHost() {
        let table = MountTable(parsing: mountinfo)
        let docker = Surroundings(kind: .container, sandbox: nil, container: Container(manager: "docker"))
        let host = Surroundings(kind: .host, sandbox: nil, container: nil)
        let cases: [(String, StorageLocation)] = [
            ("/var/lib/deviceid", .volume), ("/data/ids", .bindMount), ("/run/deviceid", .container),
            ("/root/.local/share/deviceid", .container), ("/mnt/disk/ids", .volume),
            // tmpfs and overlay: the container's own where it has them whole (0:60 at /run, 0:50 at
            // /), the host's where only a directory of one is bound in (the host's /tmp, the root
            // of the container the engine itself runs in).
            ("/srv/hosttmp/x", .bindMount), ("/var/cache/ids", .container), ("/var/lib/app/x", .container),
            ("/var/lib/nested", .bindMount),
        ]
        for (path, expected) in cases {
            XCTAssertEqual(StorageLocation.ofFiles(in: path, docker, mounts: table), expected, path)
            XCTAssertEqual(StorageLocation.ofFiles(in: path, host, mounts: table), .host, path)
        }
    }

    func testAPIDNamespaceIsAContainerOnlyOverAnImagesLayers() {
        // The root a container runtime gives (an overlay with a writable layer); the host's own
        // root under `unshare --pid` (ext4, a btrfs subvolume, composefs: an overlay without one),
        // a directory pivoted into.
        XCTAssertTrue(Container.hasImageRoot(MountTable(parsing: mountinfo)))
        XCTAssertFalse(Container.hasImageRoot(MountTable(parsing:
            "1 0 0:27 / / ro,relatime - overlay composefs ro,lowerdir+=/run/ostree/.private/cfsroot-lower,datadir+=/sysroot/ostree/repo/objects\n")))
        XCTAssertFalse(Container.hasImageRoot(MountTable(parsing: "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n")))
        XCTAssertFalse(Container.hasImageRoot(MountTable(parsing: "1 0 0:30 /@ / rw - btrfs /dev/nvme0n1p2 rw\n")))
        XCTAssertFalse(Container.hasImageRoot(MountTable(parsing: "1 0 8:1 /srv/tree / rw - ext4 /dev/sda1 rw\n")))
        // The last mount at "/" is the one that shows.
        XCTAssertFalse(Container.hasImageRoot(MountTable(parsing: mountinfo + "\n700 600 8:1 / / rw - ext4 /dev/sda1 rw\n")))
        XCTAssertFalse(Container.hasImageRoot(MountTable(parsing: "")))
    }

    func testACgroupNamespaceOfItsOwnShowsEveryHierarchyAtItsRoot() {
        XCTAssertTrue(Container.inOwnCgroupNamespace("0::/\n"))
        XCTAssertTrue(Container.inOwnCgroupNamespace("12:pids:/\n11:memory:/\n0::/\n"))
        XCTAssertFalse(Container.inOwnCgroupNamespace("0::/system.slice/deviceid-demo.service\n"))
        XCTAssertFalse(Container.inOwnCgroupNamespace("0::/user.slice/user-1000.slice/session-2.scope\n"))
        XCTAssertFalse(Container.inOwnCgroupNamespace("12:pids:/\n0::/init.scope\n"))
        XCTAssertFalse(Container.inOwnCgroupNamespace(""))
    }

    func testAFlatpakAppsDataIsAppData() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("surroundings-\(getpid())").path
        setenv("HOME", home, 1)
        defer { unsetenv("HOME") }
        let app = Surroundings(kind: .flatpak, sandbox: .flatpak(appID: "org.example.App"), container: nil)
        let table = MountTable(parsing: "")
        XCTAssertEqual(StorageLocation.ofFiles(in: home + "/.var/app/org.example.App/data/deviceid", app, mounts: table), .appData)
        XCTAssertEqual(StorageLocation.ofFiles(in: home + "/.var/app/org.example.AppOther/data", app, mounts: table), .host)
        XCTAssertEqual(StorageLocation.ofFiles(in: home + "/Documents/ids", app, mounts: table), .host)
    }

    func testWhatSurvivesWhat() {
        XCTAssertEqual(StorageLocation.allCases.filter { !$0.survivesAppDataRemoval }, [.appData])
        XCTAssertEqual(StorageLocation.allCases.filter { !$0.survivesContainerRemoval }, [.container, .undetermined])
    }

    func testTheAppIDOfAFlatpakInfo() {
        XCTAssertEqual(Sandbox.applicationName(in: "[Application]\nname=org.example.App\nruntime=x\n"), "org.example.App")
        XCTAssertEqual(Sandbox.applicationName(in: "[Instance]\nname=no\n[Application]\n name = org.x.Y \n"), "org.x.Y")
        XCTAssertNil(Sandbox.applicationName(in: "[Runtime]\nname=org.freedesktop.Platform\n"))
        XCTAssertNil(Sandbox.applicationName(in: "[Application]\nname=\n"))
    }

    /// MachineIDOrigin's rules, each with its file, container, mounts and start time.
    func testAMachineIDOlderThanTheContainerIsTheImagesAndWeak() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("machine-id-\(getpid())").path
        FileManager.default.createFile(atPath: path, contents: Data("0123456789abcdef0123456789abcdef\n".utf8))
        defer { unlink(path) }
        var times = [timespec(tv_sec: 1_600_000_000, tv_nsec: 0), timespec(tv_sec: 1_600_000_000, tv_nsec: 0)]
        XCTAssertEqual(utimensat(AT_FDCWD, path, &times, 0), 0)
        let docker = Container(manager: "docker")
        let none = MountTable(parsing: "")
        XCTAssertFalse(MachineIDOrigin.assess(path, container: nil, mounts: none, started: { 1_700_000_000 }).weak)
        let baked = MachineIDOrigin.assess(path, container: docker, mounts: none, started: { 1_700_000_000 })
        XCTAssertTrue(baked.weak)
        XCTAssertTrue(baked.detail.contains("2020-09-13 12:26:40 UTC") && baked.detail.contains("image"), baked.detail)
        XCTAssertFalse(MachineIDOrigin.assess(path, container: docker, mounts: none, started: { 1_600_000_003 }).weak,
                       "written as the container started (a second of slack for btime's rounding)")
        XCTAssertTrue(MachineIDOrigin.assess(path, container: docker, mounts: none, started: { nil }).weak,
                      "cannot tell: weak")
        let transient = MountTable(parsing: "1 0 0:9 /machine-id \(path) ro - tmpfs tmpfs ro\n")
        XCTAssertFalse(MachineIDOrigin.assess(path, container: docker, mounts: transient, started: { 1_700_000_000 }).weak)
        let hosts = MountTable(parsing: "1 0 8:1 /etc/machine-id \(path) ro - ext4 /dev/sda1 ro\n")
        XCTAssertTrue(MachineIDOrigin.assess(path, container: docker, mounts: hosts, started: { 1_700_000_000 }).weak)
        XCTAssertTrue(MachineIDOrigin.assess(nil, container: nil, mounts: none, started: { nil }).weak)
    }

    func testDatesInWordsAreUTCCivilDates() {
        XCTAssertEqual(WallClock.utcText(0), "1970-01-01 00:00:00 UTC")
        XCTAssertEqual(WallClock.utcText(951_782_400), "2000-02-29 00:00:00 UTC")
        XCTAssertEqual(WallClock.utcText(1_750_775_860), "2025-06-24 14:37:40 UTC")
        XCTAssertEqual(WallClock.utcText(-1), "1969-12-31 23:59:59 UTC")
        XCTAssertEqual(WallClock.utcText(4_102_444_800), "2100-01-01 00:00:00 UTC")
    }

    /// Records' seconds come from the clock `Date` and callers' `clock_gettime` read. glibc's
    /// `time()` reads the coarse clock, which shows the previous second for a tick after each
    /// boundary: a record was "confirmed" a second before the caller's own `before`.
    func testRecordSecondsNeverTrailTheRealtimeClock() {
        var reads = 0
        var boundaries = 0
        var last = 0
        while boundaries < 2 {
            var before = timespec()
            clock_gettime(CLOCK_REALTIME, &before)
            let seconds = WallClock.seconds()
            reads += 1
            if seconds < UInt64(before.tv_sec) {
                return XCTFail("second \(seconds) read after \(before.tv_sec), at read \(reads)")
            }
            if before.tv_sec != last { (boundaries, last) = (boundaries + 1, before.tv_sec) }
        }
        XCTAssertGreaterThan(reads, 1000)
    }
}
