@testable import DeviceID
import Foundation
import XCTest

/// The file store against real files: modes, owners, symlinks, corruption.
final class FileStoreTests: XCTestCase {
    let key = StoreKey.secret(service: "svc", account: "acct")


    private func mode(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1
    }

    func testCreatesPrivateDirectoryAndFiles() throws {
        let tmp = TemporaryDirectory()
        let store = FileStore(path: tmp.sub("a/b/store"))
        XCTAssertNil(try store.read(key), "a missing directory positively holds nothing")
        try store.write(key, [1, 2, 3])
        XCTAssertEqual(try store.read(key), [1, 2, 3])
        XCTAssertEqual(try mode(tmp.sub("a/b/store")), 0o700)
        let files = try FileManager.default.contentsOfDirectory(atPath: store.path).filter { $0.hasPrefix("secret-") }
        XCTAssertEqual(files.count, 1)
        XCTAssertEqual(try mode(store.path + "/" + files[0]), 0o600)
        XCTAssertTrue(try store.delete(key))
        XCTAssertFalse(try store.delete(key))
        XCTAssertNil(try store.read(key))
    }

    func testReplaceLeavesNoTemporaryFiles() throws {
        let tmp = TemporaryDirectory()
        let store = FileStore(path: tmp.sub("store"))
        for i in 0..<20 { try store.write(key, [UInt8(i)]) }
        XCTAssertEqual(try store.read(key), [19])
        let names = try FileManager.default.contentsOfDirectory(atPath: store.path)
        XCTAssertEqual(names.filter { $0.hasPrefix(".tmp") }, [])
    }

    /// A link is followed only when root or this user owns it (TrustedPath), wherever it stands.
    func testOwnSymlinkIsFollowedAndAForeignOneRefused() throws {
        try XCTSkipUnless(geteuid() == 0, "chown to another user needs root") // CI runs as root
        let tmp = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: tmp.sub("real"), withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        try FileManager.default.createSymbolicLink(atPath: tmp.sub("link"), withDestinationPath: tmp.sub("real"))
        let store = FileStore(path: tmp.sub("link") + "/store")
        try store.write(key, [1])
        XCTAssertEqual(try FileStore(path: tmp.sub("real") + "/store").read(key), [1])
        XCTAssertEqual(lchown(tmp.sub("link"), 65534, 65534), 0)
        XCTAssertEqual(errorCode { _ = try store.read(key) }, .permission)
        XCTAssertEqual(errorCode { try store.write(key, [2]) }, .permission)
    }

    func testGroupOrWorldWritableDirectoryIsRefused() throws {
        for bits in [0o770, 0o707, 0o777] {
            let tmp = TemporaryDirectory()
            let store = FileStore(path: tmp.sub("store"))
            try store.write(key, [1])
            chmod(store.path, mode_t(bits))
            XCTAssertEqual(errorCode { _ = try store.read(key) }, .permission, "mode \(String(bits, radix: 8))")
            XCTAssertEqual(errorCode { try store.write(key, [2]) }, .permission)
        }
    }

    /// Nothing DeviceID did not create is chmodded: a directory readable by others is used as it is.
    func testReadableDirectoryIsUsedAsItIs() throws {
        let tmp = TemporaryDirectory()
        let store = FileStore(path: tmp.sub("store"))
        try store.write(key, [1])
        chmod(store.path, 0o755)
        XCTAssertEqual(try store.read(key), [1])
        XCTAssertEqual(try mode(store.path), 0o755)
    }

    func testForeignOwnedDirectoryIsRefused() throws {
        try XCTSkipUnless(geteuid() == 0, "chown to another user needs root") // CI runs as root
        let tmp = TemporaryDirectory()
        let store = FileStore(path: tmp.sub("store"))
        try store.write(key, [1])
        XCTAssertEqual(chown(store.path, 65534, 65534), 0)
        XCTAssertEqual(errorCode { _ = try store.read(key) }, .permission)
    }

    func testSymlinkedOrForeignFileIsRefused() throws {
        let tmp = TemporaryDirectory()
        let store = FileStore(path: tmp.sub("store"))
        try store.write(key, [1])
        let name = try FileStore.fileName(for: key)
        let file = store.path + "/" + name
        try FileManager.default.removeItem(atPath: file)
        FileManager.default.createFile(atPath: tmp.sub("elsewhere"), contents: Data([9]))
        try FileManager.default.createSymbolicLink(atPath: file, withDestinationPath: tmp.sub("elsewhere"))
        XCTAssertEqual(errorCode { _ = try store.read(key) }, .permission)

        try FileManager.default.removeItem(atPath: file)
        try store.write(key, [1])
        chmod(file, 0o666)
        XCTAssertEqual(errorCode { _ = try store.read(key) }, .permission, "a world-writable file")
    }

    func testCorruptAndTruncatedFilesAreReportedNotReplaced() throws {
        let tmp = TemporaryDirectory()
        let store = FileStore(path: tmp.sub("store"))
        try store.write(key, Array("value".utf8))
        let file = store.path + "/" + (try FileStore.fileName(for: key))
        let original = try Data(contentsOf: URL(fileURLWithPath: file))
        for damaged in [original.prefix(10), original.dropLast(), Data(), Data(original.reversed())] {
            try damaged.write(to: URL(fileURLWithPath: file))
            XCTAssertEqual(errorCode { _ = try store.read(key) }, .corrupt)
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: file)), damaged, "the evidence stays")
        }
    }

    func testFileNamesDoNotDependOnAnythingButTheKey() throws {
        // Known answers, computed independently: "secret-"/"id-" + hex(SHA-256(kind ‖ service ‖ NUL
        // ‖ account))[0..<40] (python3 -c 'hashlib.sha256(b"\x01svc\x00acct").hexdigest()[:40]').
        XCTAssertEqual(try FileStore.fileName(for: key), "secret-06788bc805a601cd656f1d3e810d023bcee1b0c0")
        XCTAssertEqual(try FileStore.fileName(for: .identifier(scope: "app", name: "acct")),
                       "id-1d0c14244fc6745592812ea341dc26a660f38f15")
        XCTAssertNotEqual(try FileStore.fileName(for: key), try FileStore.fileName(for: .secret(service: "svc", account: "acct2")))
        XCTAssertNotEqual(try FileStore.fileName(for: .secret(service: "a", account: "bc")),
                          try FileStore.fileName(for: .secret(service: "ab", account: "c")))
        XCTAssertNotEqual(try FileStore.fileName(for: .identifier(scope: "app", name: "x")),
                          try FileStore.fileName(for: .secret(service: "deviceid.app", account: "x")))
    }
}

extension FileStoreTests {
    func testStaleTemporaryFilesOfDeadWritersAreRemovedOnTheLockedPath() throws {
        let tmp = TemporaryDirectory()
        let store = FileStore(path: tmp.sub("store"))
        try store.write(key, [1])
        let stale = store.path + "/.tmp-dead-writer"
        let fresh = store.path + "/.tmp-live-writer"
        FileManager.default.createFile(atPath: stale, contents: Data([1]))
        FileManager.default.createFile(atPath: fresh, contents: Data([2]))
        var old = [timespec(tv_sec: time(nil) - 3600, tv_nsec: 0), timespec(tv_sec: time(nil) - 3600, tv_nsec: 0)]
        XCTAssertEqual(utimensat(AT_FDCWD, stale, &old, 0), 0)
        try store.withLock { () throws(DeviceIDError) in }
        XCTAssertFalse(FileManager.default.fileExists(atPath: stale))
        XCTAssertTrue(FileManager.default.fileExists(atPath: fresh), "a live writer's file is left alone")
    }
}
