@testable import DeviceID
import Foundation
import XCTest

/// The stable identifier with the file store alone: no keyring involved.
final class StableIDFileBackendTests: XCTestCase {
    private func identity(_ dir: String) -> DeviceIdentity {
        makeIdentity(store: dir)
    }

    func testSameAppSameIDAcrossInstancesDifferentAppsDiffer() throws {
        let tmp = TemporaryDirectory()
        let first = try identity(tmp.path).stableID(for: "com.example.app")
        XCTAssertEqual(first.source, .created)
        XCTAssertEqual(first.id.version, 4)
        let again = try identity(tmp.path).stableID(for: "com.example.app")
        XCTAssertEqual(again.id, first.id)
        XCTAssertEqual(again.source, .file)
        let other = try identity(tmp.path).stableID(for: "com.example.other")
        XCTAssertNotEqual(other.id, first.id)
    }

    func testAnswersFromMemoryUntilReset() throws {
        let tmp = TemporaryDirectory()
        let keeper = identity(tmp.path)
        let first = try keeper.stableID(for: "app")
        try FileManager.default.removeItem(atPath: tmp.path)
        XCTAssertEqual(try keeper.stableID(for: "app"), first, "cached: the store is not read again")
        try keeper.reset(appID: "app")
        let fresh = try keeper.stableID(for: "app")
        XCTAssertNotEqual(fresh.id, first.id)
        XCTAssertEqual(fresh.source, .created)
    }

    func testResetRemovesTheStoredID() throws {
        let tmp = TemporaryDirectory()
        let first = try identity(tmp.path).stableID(for: "app")
        try identity(tmp.path).reset(appID: "app")
        XCTAssertNotEqual(try identity(tmp.path).stableID(for: "app").id, first.id)
        XCTAssertNoThrow(try identity(tmp.path).reset(appID: "never-existed"))
    }

    func testCorruptFileIsReportedAndNothingIsMinted() throws {
        let tmp = TemporaryDirectory()
        _ = try identity(tmp.path).stableID(for: "app")
        let name = try FileStore.fileName(for: .identifier(scope: "app", name: "app"))
        let file = URL(fileURLWithPath: tmp.path + "/" + name)
        var bytes = try Data(contentsOf: file)
        bytes[25] ^= 0xFF
        try bytes.write(to: file)
        for _ in 0..<3 {
            XCTAssertThrowsError(try identity(tmp.path).stableID(for: "app")) {
                XCTAssertEqual(($0 as? DeviceIDError)?.code, .corrupt)
            }
        }
        XCTAssertEqual(try Data(contentsOf: file), bytes, "the corrupt file was left as evidence")
    }

    func testInvalidNamesAreRefused() {
        let tmp = TemporaryDirectory()
        for bad in ["", String(repeating: "a", count: 256), "a\u{0}b", "line\nbreak", "tab\t", "del\u{7F}"] {
            XCTAssertThrowsError(try identity(tmp.path).stableID(for: bad)) {
                XCTAssertEqual(($0 as? DeviceIDError)?.code, .invalidArgument, bad.debugDescription)
            }
        }
        XCTAssertNoThrow(try identity(tmp.path).stableID(for: String(repeating: "a", count: 255)))
        XCTAssertNoThrow(try identity(tmp.path).stableID(for: "ünïcødé.app"))
    }

    func testConcurrentFirstRunMintsOneID() throws {
        let tmp = TemporaryDirectory()
        let results = Locked<[String]>([])  // a class over a pthread mutex, which TSan models (a Mutex on the stack drew a report)
        let store = tmp.path
        DispatchQueue.concurrentPerform(iterations: 32) { _ in
            // Separate instances: no shared memory cache, only the store and its lock.
            let id = try? makeIdentity(store: store).stableID(for: "race.app").uuidString
            results.withLock { $0.append(id ?? "error") }
        }
        let all = results.withLock { $0 }
        XCTAssertEqual(all.count, 32)
        XCTAssertEqual(Set(all).count, 1, "one ID for everyone, got \(Set(all))")
        XCTAssertFalse(all.contains("error"))
    }

    func testSecretsInTheFileStore() throws {
        let tmp = TemporaryDirectory()
        let keeper = identity(tmp.path)
        XCTAssertNil(try keeper.lookupSecret(service: "svc", account: "acct"))
        try keeper.storeSecret([0, 1, 2, 0], service: "svc", account: "acct")
        XCTAssertEqual(try keeper.lookupSecret(service: "svc", account: "acct"), [0, 1, 2, 0])
        try keeper.storeSecret([], service: "svc", account: "acct")
        XCTAssertEqual(try keeper.lookupSecret(service: "svc", account: "acct"), [])
        XCTAssertTrue(try keeper.deleteSecret(service: "svc", account: "acct"))
        XCTAssertFalse(try keeper.deleteSecret(service: "svc", account: "acct"))
        XCTAssertThrowsError(try keeper.storeSecret([UInt8](repeating: 1, count: 65537), service: "s", account: "a")) {
            XCTAssertEqual(($0 as? DeviceIDError)?.code, .tooLarge)
        }
        XCTAssertThrowsError(try keeper.storeSecret([1], service: "deviceid.app", account: "a")) {
            XCTAssertEqual(($0 as? DeviceIDError)?.code, .invalidArgument, "reserved service")
        }
    }

    func testTheChosenFileBackendSaysTheSecretIsInPlainText() throws {
        let tmp = TemporaryDirectory()
        let location = try identity(tmp.path).storeSecret(Array("hunter2".utf8), service: "svc", account: "acct")
        guard case .plaintextFile(let path) = location else { return XCTFail("\(location)") }
        XCTAssertTrue(path.hasPrefix(tmp.path + "/secret-"), path)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        XCTAssertNotNil(bytes.range(of: Data("hunter2".utf8)), "in the clear, as the location says")
        XCTAssertEqual(try identity(tmp.path).lookupSecretAndLocation(service: "svc", account: "acct")?.location, location)
    }

    /// Auto with no Secret Service on the bus: nothing written, `.noKeyring` (0.3.0 wrote it in the clear).
    func testAutoWithoutAKeyringWritesNoSecret() throws {
        let tmp = TemporaryDirectory()
        setenv("SECRET_SERVICE_BUS_NAME", "org.example.NoSecretServiceHere", 1)
        defer { unsetenv("SECRET_SERVICE_BUS_NAME") }
        let auto = makeIdentity(.auto, store: tmp.path)
        XCTAssertThrowsError(try auto.storeSecret(Array("hunter2".utf8), service: "svc", account: "acct")) {
            XCTAssertEqual(($0 as? DeviceIDError)?.code, .noKeyring, "\($0)")
        }
        let written = (try? FileManager.default.contentsOfDirectory(atPath: tmp.path)) ?? []
        XCTAssertFalse(written.contains { $0.hasPrefix("secret-") }, "\(written)")
        XCTAssertNil(try auto.lookupSecret(service: "svc", account: "acct"))
        XCTAssertEqual(try auto.stableID(for: "com.example.app").source, .created, "identifiers still go to the file store")
    }
}
