@testable import DeviceID
import Foundation
import XCTest

/// Against the real gnome-keyring of the test run (scripts/with-keyring). Each test uses its own
/// app ids, services and file store, and leaves the collection unlocked.
final class KeyringTests: XCTestCase {
    private var tmp: TemporaryDirectory!
    private var unique = ""

    override func setUpWithError() throws {
        try Keyring.require()
        tmp = TemporaryDirectory()
        unique = UUID().uuidString.lowercased()
    }

    override func tearDownWithError() throws {
        if ProcessInfo.processInfo.environment["DEVICEID_TEST_KEYRING"] == "1" { try Keyring.unlock() }
    }

    private func identity(_ backend: Configuration.Backend = .auto, timeout: UInt32 = 5000,
                          recheck: UInt32 = Configuration.defaultMirrorRecheckSeconds) -> DeviceIdentity {
        makeIdentity(backend, store: tmp.path, timeout: timeout, recheck: recheck)
    }

    /// Asks the keyring on every first lookup: what the reconciliation rules do at each re-check.
    private func rechecking() -> DeviceIdentity { identity(recheck: 0) }


    private let keyring = SecretServiceStore(timeoutMilliseconds: 5000)

    /// The keyring's ID record for `app`; nil when it holds none (nothing, or a reset's tombstone).
    private func keyringRecord(_ app: String) throws -> IdentifierRecord? {
        try keyringHeld(app).compactMap { $0.record }.first
    }

    private func keyringHeld(_ app: String) throws -> [StoredIdentifier] {
        try keyring.items(.identifier(scope: "app", name: app)).map {
            try StoredIdentifier.fromKeyring(secret: $0.secret, attributes: $0.attributes).stored
        }
    }

    /// The file store's ID record for `app`; nil when it holds none (nothing, or a tombstone).
    private func fileRecord(_ app: String) throws -> IdentifierRecord? {
        try fileHeld(app)?.record
    }

    private func fileHeld(_ app: String) throws -> StoredIdentifier? {
        try FileStore(path: tmp.path).read(.identifier(scope: "app", name: app)).map { try StoredIdentifier(parsing: $0) }
    }

    private func writeFileRecord(_ app: String, _ record: IdentifierRecord) throws {
        try FileStore(path: tmp.path).write(.identifier(scope: "app", name: app), record.serialized())
    }

    // MARK: Secrets

    func testSecretRoundTripIsBinarySafe() throws {
        let keeper = identity()
        for value: [UInt8] in [Array("plain text".utf8), [0, 255, 0, 10], [], Array(repeating: 7, count: 65536)] {
            try keeper.storeSecret(value, service: "svc-\(unique)", account: "acct")
            XCTAssertEqual(try keeper.lookupSecret(service: "svc-\(unique)", account: "acct"), value)
        }
        XCTAssertTrue(try keeper.deleteSecret(service: "svc-\(unique)", account: "acct"))
        XCTAssertNil(try keeper.lookupSecret(service: "svc-\(unique)", account: "acct"))
        XCTAssertFalse(try keeper.deleteSecret(service: "svc-\(unique)", account: "acct"))
    }

    func testSecretsGoToTheKeyringOnlyNeverToFiles() throws {
        try identity().storeSecret(Array("hush".utf8), service: "svc-\(unique)", account: "acct")
        XCTAssertEqual(try Keyring.secretToolLookup(service: "svc-\(unique)", account: "acct"), Data("hush".utf8))
        let files = (try? FileManager.default.contentsOfDirectory(atPath: tmp.path)) ?? []
        XCTAssertEqual(files.filter { $0.hasPrefix("secret-") }, [], "a keyring secret must not reach the file store")
    }

    func testSecretToolReadsWhatWeStoreAndWeReadWhatItStores() throws {
        try identity().storeSecret(Array("from deviceid".utf8), service: "s-\(unique)", account: "a")
        XCTAssertEqual(try Keyring.secretToolLookup(service: "s-\(unique)", account: "a"), Data("from deviceid".utf8))
        try Keyring.secretToolStore(service: "t-\(unique)", account: "b", Data("from secret-tool".utf8))
        XCTAssertEqual(try identity().lookupSecret(service: "t-\(unique)", account: "b"), Array("from secret-tool".utf8))
        // Replacing an item secret-tool made leaves one item, with our value.
        try identity().storeSecret(Array("replaced".utf8), service: "t-\(unique)", account: "b")
        XCTAssertEqual(try Keyring.secretToolLookup(service: "t-\(unique)", account: "b"), Data("replaced".utf8))
        XCTAssertTrue(try identity().deleteSecret(service: "t-\(unique)", account: "b"))
        XCTAssertNil(try Keyring.secretToolLookup(service: "t-\(unique)", account: "b"))
    }

    // MARK: The stable identifier

    func testIDIsKeptInTheKeyringAndMirrored() throws {
        let app = "app-\(unique)"
        let first = try identity().stableID(for: app)
        XCTAssertEqual(first.source, .created)
        XCTAssertEqual(try keyringRecord(app)?.id, first.id)
        XCTAssertEqual(try fileRecord(app)?.id, first.id)
        let again = try rechecking().stableID(for: app)
        XCTAssertEqual(again.id, first.id)
        XCTAssertEqual(again.source, .keyring)
        XCTAssertFalse(again.flags.contains(.mirrored))
    }

    // MARK: Mirror-first

    func testTheMirrorSaysWhenTheKeyringConfirmedIt() throws {
        let app = "app-\(unique)"
        let before = UInt64(Date().timeIntervalSince1970)
        let first = try identity().stableID(for: app)
        let confirmed = try XCTUnwrap(try fileRecord(app)?.confirmed, "minted into both: confirmed at once")
        XCTAssertTrue((before...before + 5).contains(confirmed))
        XCTAssertNil(try keyringRecord(app)?.confirmed, "the keyring's copy carries no confirmation")
        XCTAssertFalse(try Keyring.secretToolSearch(service: "deviceid.app", account: app).contains("confirmed"))
        let mirrored = try identity().stableID(for: app)
        XCTAssertEqual(mirrored.id, first.id)
        XCTAssertEqual(mirrored.source, .keyring)
        XCTAssertTrue(mirrored.flags.contains(.mirrored))
    }

    func testAConfirmedMirrorAnswersWhileTheKeyringIsLocked() throws {
        let app = "app-\(unique)"
        let first = try identity().stableID(for: app)
        try Keyring.lock()
        let answer = try identity().stableID(for: app)
        XCTAssertEqual(answer.id, first.id)
        XCTAssertTrue(answer.flags.contains(.mirrored), "no D-Bus: the lock was not even seen")
        // A reset always asks the keyring.
        XCTAssertEqual(errorCode { try self.identity().reset(appID: app) }, .locked)
        XCTAssertEqual(try identity().stableID(for: app).id, first.id)
    }

    func testAnOldOrFutureConfirmationSendsTheLookupToTheKeyringWhichRenewsIt() throws {
        let app = "app-\(unique)"
        let first = try identity().stableID(for: app)
        let now = UInt64(Date().timeIntervalSince1970)
        for stale in [now - 86_400 - 5, now + 3600] {
            try writeFileRecord(app, try XCTUnwrap(try fileRecord(app)).confirmed(at: stale))
            let answer = try identity().stableID(for: app)
            XCTAssertEqual(answer.id, first.id)
            XCTAssertEqual(answer.source, .keyring)
            XCTAssertFalse(answer.flags.contains(.mirrored), "confirmed at \(stale), now \(now)")
            let renewed = try XCTUnwrap(try fileRecord(app)?.confirmed)
            XCTAssertTrue((now...now + 5).contains(renewed), "renewed to \(renewed)")
        }
    }

    func testAMirrorWrittenWithoutTheKeyringIsNotConfirmedUntilTheKeyringHoldsIt() throws {
        let app = "app-\(unique)"
        let headless = try identity(.file).stableID(for: app)
        XCTAssertNil(try fileRecord(app)?.confirmed, "the file backend never confirms")
        let answer = try identity().stableID(for: app)
        XCTAssertEqual(answer.id, headless.id)
        XCTAssertFalse(answer.flags.contains(.mirrored))
        XCTAssertEqual(try keyringRecord(app)?.id, headless.id)
        XCTAssertNotNil(try fileRecord(app)?.confirmed, "confirmed once the keyring received it")
    }

    func testAnOutsideChangeToTheKeyringIsNoticedAtTheRecheck() throws {
        let app = "app-\(unique)"
        let first = try identity().stableID(for: app)
        try Keyring.secretToolClear(service: "deviceid.app", account: app)
        XCTAssertTrue(try identity().stableID(for: app).flags.contains(.mirrored), "within the interval")
        XCTAssertNil(try keyringRecord(app))
        let rechecked = try rechecking().stableID(for: app)
        XCTAssertEqual(rechecked.id, first.id)
        XCTAssertEqual(try keyringRecord(app)?.id, first.id, "the keyring received the ID back")
    }

    func testTheRecheckIntervalComesFromTheEnvironmentAndIsBounded() throws {
        XCTAssertEqual(try Configuration.resolved().mirrorRecheckSeconds, Configuration.defaultMirrorRecheckSeconds)
        XCTAssertEqual(errorCode { _ = try Configuration(mirrorRecheckSeconds: 2_592_001).validated() }, .invalidArgument)
    }

    func testEitherStoreRestoresTheOther() throws {
        let app = "app-\(unique)"
        let first = try identity().stableID(for: app)
        try FileStore(path: tmp.path).delete(.identifier(scope: "app", name: app))
        XCTAssertEqual(try identity().stableID(for: app).id, first.id)
        XCTAssertEqual(try fileRecord(app)?.id, first.id, "the mirror was rewritten")
        try Keyring.secretToolClear(service: "deviceid.app", account: app)
        let fromFile = try rechecking().stableID(for: app)
        XCTAssertEqual(fromFile.id, first.id)
        XCTAssertEqual(fromFile.source, .file)
        XCTAssertEqual(try keyringRecord(app)?.id, first.id, "the keyring received the ID back")
    }

    func testHeadlessFirstThenKeyringKeepsTheID() throws {
        let app = "app-\(unique)"
        let headless = try identity(.file).stableID(for: app)
        XCTAssertNil(try keyringRecord(app))
        let desktop = try identity(.auto).stableID(for: app)
        XCTAssertEqual(desktop.id, headless.id)
        XCTAssertEqual(desktop.source, .file)
        XCTAssertEqual(try keyringRecord(app)?.id, headless.id)
    }

    /// docs/STATE.md rule 1: the keyring is the authority; a mirror never overrides it, however
    /// old its record (0.2.0's "older wins" let a stale mirror undo a reset made elsewhere).
    func testDisagreeingStoresConvergeOnTheKeyringsID() throws {
        let app = "app-\(unique)"
        let key = StoreKey.identifier(scope: "app", name: app)
        let old = IdentifierRecord(id: try ID128.random(), created: 1000)
        let new = IdentifierRecord(id: try ID128.random(), created: 2000)
        try keyring.write(key, new.keyringSecret, extra: new.keyringAttributes)
        try FileStore(path: tmp.path).write(key, old.serialized())
        let answer = try identity().stableID(for: app)
        XCTAssertEqual(answer.id, new.id)
        XCTAssertEqual(answer.source, .keyring)
        XCTAssertEqual(try keyringRecord(app)?.id, new.id)
        XCTAssertEqual(try fileRecord(app)?.id, new.id, "the mirror received the keyring's ID")
    }

    func testTheKeyringItemIsTheIDAloneAndItsFieldsAreAttributes() throws {
        let app = "app-\(unique)"
        let id = try identity().stableID(for: app)
        XCTAssertEqual(try Keyring.secretToolLookup(service: "deviceid.app", account: app), Data(id.uuidString.utf8),
                       "secret-tool lookup prints exactly the ID")
        let record = try XCTUnwrap(try keyringRecord(app))
        XCTAssertEqual(record, try fileRecord(app), "the same creation time and fingerprint as the mirror")
        XCTAssertNotNil(record.created)
        XCTAssertEqual(record.machine, MachineID.fingerprint())
    }

    /// 0.1.0 kept the whole text record as the secret. Such an item is read with nothing lost, and
    /// rewritten in the current form.
    func testAn010ItemIsReadAndRewrittenWithNothingLost() throws {
        let app = "app-\(unique)"
        let old = IdentifierRecord(id: try ID128.random(), created: 1_764_425_600, machine: Array(0..<16))
        let text = "\(old.id.uuidString)\ncreated=1764425600\nmachine=000102030405060708090a0b0c0d0e0f\n"
        try Keyring.secretToolStore(service: "deviceid.app", account: app, Data(text.utf8))
        let answer = try identity(.secretService).stableID(for: app)
        XCTAssertEqual(answer.id, old.id)
        XCTAssertTrue(answer.deviceChanged, "the 0.1.0 fingerprint was kept and compared")
        XCTAssertEqual(try Keyring.secretToolLookup(service: "deviceid.app", account: app), Data(old.id.uuidString.utf8))
        XCTAssertEqual(try keyringRecord(app), old, "creation time and fingerprint moved to attributes")
        XCTAssertEqual(try keyring.items(.identifier(scope: "app", name: app)).count, 1, "the old item is gone")
    }

    func testCorruptKeyringItemWithoutMirrorIsCorrupt() throws {
        let app = "app-\(unique)"
        try Keyring.secretToolStore(service: "deviceid.app", account: app, Data("garbage".utf8))
        XCTAssertEqual(errorCode { _ = try self.identity().stableID(for: app) }, .corrupt)
        XCTAssertEqual(try Keyring.secretToolLookup(service: "deviceid.app", account: app), Data("garbage".utf8),
                       "nothing was replaced")
    }

    func testLockedKeyringWithoutMirrorIsLockedAndMintsNothing() throws {
        let app = "app-\(unique)"
        try Keyring.lock()
        XCTAssertEqual(errorCode { _ = try self.identity().stableID(for: app) }, .locked)
        XCTAssertEqual(errorCode { _ = try self.identity(.secretService).stableID(for: app) }, .locked)
        XCTAssertNil(try fileRecord(app), "no ID minted into the mirror either")
        try Keyring.unlock()
        XCTAssertEqual(try identity().stableID(for: app).source, .created)
    }

    func testLockedKeyringWithMirrorAnswersFromTheMirror() throws {
        let app = "app-\(unique)"
        let first = try identity().stableID(for: app)
        try Keyring.lock()
        let answer = try rechecking().stableID(for: app)
        XCTAssertEqual(answer.id, first.id)
        XCTAssertEqual(answer.source, .file)
        XCTAssertEqual(errorCode { _ = try self.identity(.secretService).stableID(for: app) }, .locked)
    }

    func testLockedKeyringRefusesResetAndSecretsWithoutTouchingAnything() throws {
        let app = "app-\(unique)"
        let first = try identity().stableID(for: app)
        try identity().storeSecret([1], service: "s-\(unique)", account: "a")
        try Keyring.lock()
        XCTAssertEqual(errorCode { try self.identity().reset(appID: app) }, .locked)
        XCTAssertEqual(try fileRecord(app)?.id, first.id, "the mirror was not removed")
        XCTAssertEqual(errorCode { _ = try self.identity().lookupSecret(service: "s-\(unique)", account: "a") }, .locked)
        XCTAssertEqual(errorCode { try self.identity().storeSecret([2], service: "s-\(unique)", account: "a") }, .locked)
        XCTAssertEqual(errorCode { _ = try self.identity().deleteSecret(service: "s-\(unique)", account: "a") }, .locked)
        try Keyring.unlock()
        XCTAssertEqual(try identity().lookupSecret(service: "s-\(unique)", account: "a"), [1])
        XCTAssertEqual(try identity().stableID(for: app).id, first.id)
    }

    func testResetLeavesATombstoneInBothStoresAndTheNextIDIsOfTheNextGeneration() throws {
        let app = "app-\(unique)"
        let first = try identity().stableID(for: app)
        try identity().reset(appID: app)
        XCTAssertEqual(try keyringHeld(app), [.tombstone(generation: 1)], "the ID item was replaced, not kept")
        XCTAssertEqual(try fileHeld(app), .tombstone(generation: 1))
        let second = try identity().stableID(for: app)
        XCTAssertNotEqual(second.id, first.id)
        XCTAssertEqual(try keyringHeld(app), [.record(try XCTUnwrap(try keyringRecord(app)))], "the tombstone is gone")
        XCTAssertEqual(try keyringRecord(app)?.generation, 1)
        XCTAssertEqual(try fileRecord(app)?.generation, 1)
        XCTAssertEqual(try fileRecord(app)?.id, second.id)
        try identity().reset(appID: app)
        XCTAssertEqual(try keyringHeld(app), [.tombstone(generation: 2)])
    }

    /// A mirror of an older generation (another data directory's, or restored from a backup) is
    /// dead: it neither answers nor is written back, once the keyring says a reset came after it.
    func testADeadMirrorIsNeverWrittenBack() throws {
        let app = "app-\(unique)"
        let first = try identity().stableID(for: app)
        let stale = try XCTUnwrap(try fileRecord(app))
        try identity().reset(appID: app)
        try writeFileRecord(app, stale)
        let answer = try rechecking().stableID(for: app)
        XCTAssertNotEqual(answer.id, first.id)
        XCTAssertEqual(answer.source, .created)
        XCTAssertEqual(try keyringRecord(app)?.id, answer.id)
        XCTAssertEqual(try fileRecord(app)?.id, answer.id)
    }

    func testConcurrentFirstRunWithKeyringMintsOneID() throws {
        let app = "race-\(unique)"
        let results = Locked<[String]>([])  // see StableIDFileBackendTests: TSan models a pthread mutex
        let configuration = Configuration(backend: .auto, storeDirectory: tmp.path)
        DispatchQueue.concurrentPerform(iterations: 16) { _ in
            let id = (try? DeviceIdentity(configuration: configuration).stableID(for: app))?.uuidString ?? "error"
            results.withLock { $0.append(id) }
        }
        let all = results.withLock { $0 }
        XCTAssertEqual(Set(all).count, 1, "\(Set(all))")
        XCTAssertEqual(try keyringRecord(app)?.id.uuidString, all.first)
    }

    func testDiagnosisSeesBothStores() throws {
        let diagnosis = identity().diagnose()
        XCTAssertEqual(diagnosis.answeringStores, "keyring+file")
        try Keyring.lock()
        XCTAssertEqual(identity().diagnose().answeringStores, "file")
    }
}
