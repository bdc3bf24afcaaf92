@testable import DeviceID
import Foundation
import XCTest

/// What `IdentifierKeeper.resolve` does with `decide`'s decisions (the decisions themselves are in
/// DecisionTableTests): its two phases, the failed writes it reports, the one clock it uses, and
/// the caller's side work. The keyring tests use the real gnome-keyring of scripts/with-keyring.
final class IdentifierKeeperTests: XCTestCase {
    private var tmp: TemporaryDirectory!
    private var app = ""
    private var key: StoreKey { .identifier(scope: "app", name: app) }
    /// Far from the machine's clock (2001): a value that only the `now` passed in can have produced.
    private let now: UInt64 = 1_000_000_000
    private let day: UInt64 = 86_400
    private let keyringStore = SecretServiceStore(timeoutMilliseconds: 5000)

    override func setUp() {
        tmp = TemporaryDirectory()
        app = "keeper-\(UUID().uuidString.lowercased())"
    }

    override func tearDownWithError() throws {
        if ProcessInfo.processInfo.environment["DEVICEID_TEST_KEYRING"] == "1" {
            try Keyring.secretToolClear(service: "deviceid.app", account: app)
        }
    }

    private func keeper(_ selection: Stores.Selection, recheck: UInt32 = 86_400) throws -> IdentifierKeeper {
        IdentifierKeeper(stores: try Stores(selection, timeoutMilliseconds: 5000,
                                            storeDirectory: tmp.path, mirrorRecheckSeconds: recheck))
    }

    private func resolve(_ keeper: IdentifierKeeper, now: UInt64? = nil, alongside: @escaping () -> Void = {})
        throws -> IdentifierKeeper.Resolution {
        try keeper.resolve(key, now: now ?? self.now, fingerprint: { nil }, alongside: alongside)
    }

    private func mirrorHeld() throws -> StoredIdentifier? {
        try FileStore(path: tmp.path).read(key).map { try StoredIdentifier(parsing: $0) }
    }

    private func mirrorRecord() throws -> IdentifierRecord? { try mirrorHeld()?.record }

    private func keyringRecords() throws -> [IdentifierRecord] {
        try keyringStore.items(key).compactMap { try StoredIdentifier.fromKeyring(secret: $0.secret, attributes: $0.attributes).stored.record }
    }

    private func putInKeyring(_ record: IdentifierRecord) throws {
        try keyringStore.write(key, record.keyringSecret, extra: record.keyringAttributes)
    }

    private func temporaries() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: tmp.path).filter { $0.hasPrefix(".tmp-") }
    }

    /// Runs `body` while this process cannot write a byte to any regular file (RLIMIT_FSIZE 0,
    /// SIGXFSZ ignored, so a write fails with EFBIG): files can still be created, opened, locked
    /// and read. It is a full disk for the mirror alone — the keyring's daemon is another process —
    /// and, unlike permissions, it holds for root, as the tests run. `body` must not assert (XCTest
    /// may be writing its log to a file).
    private func withoutFileWrites<T>(_ body: () throws -> T) throws -> T {
        var saved = rlimit()
        XCTAssertEqual(getrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &saved), 0)
        let handler = signal(SIGXFSZ, SIG_IGN)
        var none = saved
        none.rlim_cur = 0
        XCTAssertEqual(setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &none), 0)
        defer {
            setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &saved)
            signal(SIGXFSZ, handler)
        }
        return try body()
    }

    // MARK: Issue 17.1 — decide once without the locks, and again on a fresh sighting under them

    func testAnAnswerThatNeedsNoWriteIsGivenWithoutTheLockAndAFailureIsThrown() throws {
        let keeper = try keeper(.fileOnly)
        let r = IdentifierRecord(id: try ID128.random(), created: 7, generation: 2)
        try FileStore(path: tmp.path).write(key, r.serialized())
        let answer = try XCTUnwrap(try keeper.answerWithoutLock(key, now: now))
        XCTAssertEqual(answer.record, r)
        XCTAssertEqual(answer.source, .file)
        XCTAssertFalse(answer.provisional)
        XCTAssertFalse(FileManager.default.fileExists(atPath: tmp.sub(".lock")), "the store's lock was never taken")

        try FileStore(path: tmp.path).write(key, Array("not a record".utf8))
        XCTAssertEqual(errorCode { _ = try keeper.answerWithoutLock(key, now: now) }, .corrupt,
                       "rule 4: a corrupt copy and nothing else is the answer's error, without the lock")
    }

    func testAMintDecidedWithoutTheLockIsDecidedAgainOnWhatTheStoresHoldUnderIt() throws {
        let keeper = try keeper(.fileOnly)
        XCTAssertNil(try keeper.answerWithoutLock(key, now: now), "nothing anywhere: a mint, which only the locked phase makes")
        // Another process mints between the first read and the lock.
        let theirs = IdentifierRecord(id: try ID128.random(), created: 5)
        try FileStore(path: tmp.path).write(key, theirs.serialized())
        let settled = try keeper.stores.withLocks { () throws(DeviceIDError) in
            try keeper.settleUnderLock(key, now: now, fingerprint: { nil })
        }
        XCTAssertEqual(settled.record, theirs, "I1: the other process's ID, not a second mint")
        XCTAssertEqual(settled.source, .file)
        XCTAssertEqual(try mirrorRecord(), theirs)
    }

    func testARepairDecidedWithoutTheLockIsNotMadeWhenAResetCameFirst() throws {
        try Keyring.require()
        let keeper = try keeper(.keyringAndFile)
        let old = IdentifierRecord(id: try ID128.random(), created: 5)
        try FileStore(path: tmp.path).write(key, old.serialized())
        XCTAssertNil(try keeper.answerWithoutLock(key, now: now), "rule 2: the keyring has none and must receive M's record")
        // Another process resets (tombstone 1 in both stores) before this one takes the lock.
        let staged = try FileStore(path: tmp.path).stage(key, StoredIdentifier.tombstoneText(1))
        try keyringStore.write(key, [], extra: StoredIdentifier.tombstoneAttributes(1))
        try staged.commit()
        let settled = try keeper.stores.withLocks { () throws(DeviceIDError) in
            try keeper.settleUnderLock(key, now: now, fingerprint: { nil })
        }
        XCTAssertEqual(settled.source, .created, "rule 4: minted over the tombstones")
        XCTAssertEqual(settled.record.generation, 1)
        XCTAssertNotEqual(settled.record.id, old.id, "I2: the reset wins")
        XCTAssertEqual(try keyringRecords().map(\.id), [settled.record.id], "I2: the old ID was never written to the keyring")
        XCTAssertEqual(try mirrorRecord()?.id, settled.record.id)
    }

    // MARK: Issue 17.2 — a mirror that cannot be written is reported, and the answer stands

    func testAMirrorThatCannotBeWrittenIsRecordedAndTheKeyringsAnswerStands() throws {
        try Keyring.require()
        let keeper = try keeper(.keyringAndFile)
        let k = IdentifierRecord(id: try ID128.random(), created: 1234)
        try putInKeyring(k)
        let resolution = try withoutFileWrites { try resolve(keeper) }
        XCTAssertEqual(resolution.record, k, "rule 1: the keyring's ID")
        XCTAssertEqual(resolution.source, .keyring)
        XCTAssertEqual(resolution.mirrorFailure?.code, .io, "the failed write to the mirror is kept")
        XCTAssertTrue(resolution.mirrorFailure?.detail.contains(tmp.path) ?? false, "\(String(describing: resolution.mirrorFailure))")
        XCTAssertNil(resolution.keyringFailure)
        XCTAssertFalse(resolution.provisional, "the keyring holds it: final")
        XCTAssertFalse(resolution.repairedCorrupt)
        XCTAssertNil(try mirrorHeld(), "nothing was written")
        XCTAssertEqual(try temporaries(), [], "the staged copy was removed")

        let next = try resolve(keeper)
        XCTAssertNil(next.mirrorFailure, "a mirror that can be written reports nothing")
        XCTAssertEqual(next.record, k)
        XCTAssertEqual(try mirrorRecord()?.confirmed, now, "the next lookup repaired the mirror")
    }

    func testAMintWhoseMirrorCannotBeWrittenIsKeptInTheKeyringAndTheFailureRecorded() throws {
        try Keyring.require()
        let keeper = try keeper(.keyringAndFile)
        let resolution = try withoutFileWrites { try resolve(keeper) }
        XCTAssertEqual(resolution.source, .created)
        XCTAssertEqual(resolution.mirrorFailure?.code, .io)
        XCTAssertNil(resolution.keyringFailure)
        XCTAssertFalse(resolution.provisional, "rule 4: the keyring holds the mint")
        XCTAssertEqual(try keyringRecords().map(\.id), [resolution.record.id])
        XCTAssertNil(try mirrorHeld())
    }

    func testAMintNoStoreCanKeepFailsWithTheMirrorsError() throws {
        let keeper = try keeper(.fileOnly)
        XCTAssertEqual(errorCode { _ = try withoutFileWrites { try resolve(keeper) } }, .io,
                       "nothing kept anywhere: the mint's error, no ID")
        XCTAssertNil(try mirrorHeld())
        XCTAssertEqual(try temporaries(), [])
    }

    // MARK: Issue 17.3 — one clock: the `now` passed in

    func testTheNowPassedInDatesTheMintAndTheConfirmationAndJudgesFreshness() throws {
        try Keyring.require()
        let keeper = try keeper(.keyringAndFile)
        let minted = try resolve(keeper, now: now)
        XCTAssertEqual(minted.source, .created)
        XCTAssertEqual(minted.record.created, now)
        XCTAssertEqual(try keyringRecords().map(\.created), [now])
        XCTAssertEqual(try mirrorRecord()?.created, now)
        XCTAssertEqual(try mirrorRecord()?.confirmed, now)

        // 25 years before the machine's clock: fresh only by the `now` passed in.
        let fresh = try resolve(keeper, now: now + 10)
        XCTAssertTrue(fresh.fromMirror, "mirror-first by the `now` passed in")
        XCTAssertEqual(fresh.record.id, minted.record.id)

        let stale = try resolve(keeper, now: now + day)
        XCTAssertFalse(stale.fromMirror, "one interval later the keyring is asked")
        XCTAssertEqual(stale.source, .keyring)
        XCTAssertEqual(try mirrorRecord()?.confirmed, now + day, "and the mirror re-confirmed at that `now`")

        let stepped = try resolve(keeper, now: now + 5)
        XCTAssertFalse(stepped.fromMirror, "a confirmation after `now` (the clock stepped back) is not fresh")
        XCTAssertEqual(try mirrorRecord()?.confirmed, now + 5)
    }

    /// A source file's code, less its comments (which may name what the code must not use).
    private func code(_ path: String) throws -> String {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            .map { line in line.range(of: "//").map { line[..<$0.lowerBound] } ?? line }
            .joined(separator: "\n")
    }

    func testIdentifierKeeperReadsNoClockAndCoreNamesNoMachineID() throws {
        let core = repositoryRoot + "/Sources/DeviceID/Core"
        let keeperSource = try code(core + "/IdentifierKeeper.swift")
        for clock in ["time(", "WallClock", "Monotonic", "clock_gettime", "gettimeofday"] {
            XCTAssertFalse(keeperSource.contains(clock), "IdentifierKeeper reads the clock through \(clock)")
        }
        XCTAssertFalse(keeperSource.contains("catch {}"), "an error swallowed in IdentifierKeeper")
        for file in try FileManager.default.contentsOfDirectory(atPath: core) where file.hasSuffix(".swift") {
            let text = try code(core + "/" + file)
            XCTAssertFalse(text.contains("time(nil)"), "\(file) reads the clock itself")
            XCTAssertFalse(text.contains("MachineID"), "\(file) reaches into the machine layer")
        }
    }

    // MARK: Issue 17.5 — the side work is the caller's

    func testTheCallersSideWorkRunsOnceBesideTheKeyringsLookup() throws {
        try Keyring.require()
        let keeper = try keeper(.keyringAndFile)
        let caller = pthread_self()
        let ran = Locked<[Bool]>([])  // per run: on another thread
        let note = { ran.withLock { $0.append(pthread_equal(pthread_self(), caller) == 0) } }
        let minted = try resolve(keeper, alongside: note)
        XCTAssertEqual(minted.source, .created)
        XCTAssertEqual(ran.withLock { $0 }, [true], "once, on the side thread, though the mint read the stores twice")

        let mirrored = try resolve(keeper, now: now + 1, alongside: note)
        XCTAssertTrue(mirrored.fromMirror)
        XCTAssertEqual(ran.withLock { $0 }.count, 1, "a mirror-first answer makes no lookup to overlap")

        _ = try resolve(try self.keeper(.fileOnly), alongside: note)
        XCTAssertEqual(ran.withLock { $0 }.count, 1, "one store: no D-Bus to overlap")
    }
}
