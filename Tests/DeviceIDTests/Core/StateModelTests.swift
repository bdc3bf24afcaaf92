@testable import DeviceID
import XCTest

/// The pure parts of docs/STATE.md: the merge rule (`IdentifierKeeper.decide`) as a table, the
/// stored forms of tombstones and generations, and the setting clock. The whole-system behaviour
/// is tested against the real keyring in KeyringTests, Tests/python/test_state_model.py and
/// Tests/model/.
final class StateModelTests: XCTestCase {
    private let tmp = TemporaryDirectory()
    private let now: UInt64 = 1_800_000_000

    private func keeper(_ selection: Stores.Selection = .keyringAndFile, recheck: UInt32 = 86_400) throws -> IdentifierKeeper {
        IdentifierKeeper(stores: try Stores(selection, timeoutMilliseconds: 1000,
                                            storeDirectory: tmp.path, mirrorRecheckSeconds: recheck))
    }

    private func record(generation: UInt64 = 0, confirmed: UInt64? = nil, created: UInt64 = 1000) throws -> IdentifierRecord {
        var r = IdentifierRecord(id: try ID128.random(), created: created, generation: generation)
        r.confirmed = confirmed
        return r
    }

    private typealias Held = IdentifierKeeper.Held
    private let locked = DeviceIDError(.locked, "locked")

    // MARK: The merge rule

    func testALiveKeyringRecordWinsOverAnyMirrorAndTheMirrorReceivesIt() throws {
        let k = try record(created: 2000), m = try record(created: 1000)  // the mirror's is older
        let decision = try keeper().decide(.init(keyring: .found(Held(record: k)), file: .found(Held(record: m))), now: now)
        guard case .use(let chosen, .keyring, let repair, false) = decision else { return XCTFail("\(decision)") }
        XCTAssertEqual(chosen, k)
        XCTAssertEqual(repair, [.file])
    }

    func testAConfirmedMirrorThatAgreesNeedsNoWrite() throws {
        let k = try record()
        var m = k
        m.confirmed = now - 10
        let decision = try keeper().decide(.init(keyring: .found(Held(record: k)), file: .found(Held(record: m))), now: now)
        guard case .use(_, .keyring, let repair, false) = decision else { return XCTFail("\(decision)") }
        XCTAssertEqual(repair, [])
    }

    func testARecordBelowATombstoneIsDeadAndTheMintIsOfTheTombstonesGeneration() throws {
        let stale = try record(generation: 1, confirmed: now - 10)
        let decision = try keeper().decide(.init(keyring: .found(Held(tombstone: 2)), file: .found(Held(record: stale))), now: now)
        guard case .mint(let targets, 2, false) = decision else { return XCTFail("\(decision)") }
        XCTAssertEqual(targets, [.keyring, .file])
    }

    func testAMirrorTombstoneKillsAnOlderKeyringRecord() throws {
        let k = try record(generation: 0)
        let decision = try keeper().decide(.init(keyring: .found(Held(record: k)), file: .found(Held(tombstone: 1))), now: now)
        guard case .mint(_, 1, false) = decision else { return XCTFail("\(decision)") }
    }

    func testAKeyringWithoutALiveRecordReceivesTheMirrors() throws {
        let m = try record(generation: 3)
        let decision = try keeper().decide(.init(keyring: .found(Held(tombstone: 3)), file: .found(Held(record: m))), now: now)
        guard case .use(let chosen, .file, let repair, false) = decision else { return XCTFail("\(decision)") }
        XCTAssertEqual(chosen, m)
        XCTAssertEqual(repair, [.keyring, .file])
    }

    func testASilentKeyringLeavesTheMirrorToAnswerProvisionallyUnlessFreshlyConfirmed() throws {
        for (confirmed, provisional) in [(nil, true), (now - 100, false), (now - 200_000, true), (now + 100, true)] as [(UInt64?, Bool)] {
            let m = try record(confirmed: confirmed)
            let decision = try keeper().decide(.init(keyring: .failed(locked), file: .found(Held(record: m))), now: now)
            guard case .use(let chosen, .file, let repair, let p) = decision else { return XCTFail("\(decision)") }
            XCTAssertEqual(chosen, m)
            XCTAssertEqual(repair, [], "nothing is written while the keyring is silent")
            XCTAssertEqual(p, provisional, "confirmed \(String(describing: confirmed))")
        }
    }

    func testNothingIsMintedWhileAStoreThatMayHoldTheIDIsSilent() throws {
        for file: Stores.Answer<Held> in [.empty, .found(Held(tombstone: 4))] {
            let decision = try keeper().decide(.init(keyring: .failed(locked), file: file), now: now)
            guard case .fail(let error) = decision else { return XCTFail("\(decision)") }
            XCTAssertEqual(error.code, .locked)
        }
        let corrupt = DeviceIDError(.corrupt, "bad")
        let decision = try keeper().decide(.init(keyring: .empty, file: .failed(corrupt)), now: now)
        guard case .fail(let error) = decision else { return XCTFail("\(decision)") }
        XCTAssertEqual(error.code, .corrupt, "a corrupt copy with no valid one anywhere stays an error")
    }

    func testAnAbsentKeyringMintsIntoTheFileProvisionally() throws {
        let absent = DeviceIDError.noKeyringHere("no bus")
        let decision = try keeper().decide(.init(keyring: .unreachable(absent), file: .empty), now: now)
        guard case .mint(let targets, 0, true) = decision else { return XCTFail("\(decision)") }
        XCTAssertEqual(targets, [.file])
    }

    func testTheFileBackendIsFinalUnlessTheStoreKnowsAKeyring() throws {
        var sighting = IdentifierKeeper.Sighting(keyring: .notConfigured, file: .empty)
        guard case .mint(_, _, false) = try keeper(.fileOnly).decide(sighting, now: now) else { return XCTFail() }
        sighting.keyringUnasked = true
        guard case .mint(_, _, true) = try keeper(.fileOnly).decide(sighting, now: now) else { return XCTFail() }
    }

    // MARK: Stored forms

    func testTombstonesAndGenerationsRoundTrip() throws {
        XCTAssertEqual(try StoredIdentifier(parsing: StoredIdentifier.tombstoneText(7)), .tombstone(generation: 7))
        let r = try record(generation: 5)
        XCTAssertEqual(try StoredIdentifier(parsing: r.serialized()), .record(r))
        XCTAssertTrue(String(decoding: r.serialized(), as: UTF8.self).contains("\ngeneration=5\n"))
        XCTAssertTrue(r.keyringAttributes.contains { $0 == ("deviceid-generation", "5") })
        let (stored, legacy) = try StoredIdentifier.fromKeyring(secret: [], attributes: ["deviceid-reset": "3"])
        XCTAssertEqual(stored, .tombstone(generation: 3))
        XCTAssertFalse(legacy)
        for bad in ["reset\ngeneration=\n", "reset\ngeneration=0\n", "reset\ngeneration=x\n", "reset\n"] {
            XCTAssertThrowsError(try StoredIdentifier(parsing: Array(bad.utf8)), bad)
        }
        XCTAssertThrowsError(try StoredIdentifier.fromKeyring(secret: Array("x".utf8), attributes: ["deviceid-reset": "3"]))
    }

    func testRecordsWithoutAGenerationAreGenerationZero() throws {
        let uuid = "1b4e28ba-2fa1-4d2b-883f-0016d3cca427"
        XCTAssertEqual(try IdentifierRecord(parsing: Array("\(uuid)\ncreated=5\n".utf8)).generation, 0)
    }

    func testOfTwoKeyringCopiesTheLaterGenerationThenTheOlderIsPreferred() throws {
        let old = try record(generation: 1, created: 100), new = try record(generation: 2, created: 200)
        XCTAssertEqual(old.preferred(over: new), new)
        XCTAssertEqual(new.preferred(over: old), new)
    }

    // MARK: Settings

    func testSettingsOf020AreClockZeroAndTheLaterClockWinsTiesGoToOn() throws {
        typealias Value = SettingKeeper.Value
        XCTAssertEqual(try Value(parsing: Array("on\n".utf8)), Value(on: true, clock: 0))
        XCTAssertEqual(try Value(parsing: Array("off\nclock=12\n".utf8)), Value(on: false, clock: 12))
        XCTAssertEqual(Value(on: false, clock: 12).bytes, Array("off\nclock=12\n".utf8))
        XCTAssertEqual(Value(on: true, clock: 0).bytes, Array("on\n".utf8), "a clock of 0 is written as 0.2.0 did")
        for bad in ["", "on", "yes\n", "on\nclock=\n", "on\nclock=x\n", "on\nother=1\n", "on\nclock=1\nx=2\n"] {
            XCTAssertThrowsError(try Value(parsing: Array(bad.utf8)), bad)
        }
        XCTAssertTrue(Value(on: false, clock: 2).wins(over: Value(on: true, clock: 1)))
        XCTAssertTrue(Value(on: true, clock: 2).wins(over: Value(on: false, clock: 2)), "privacy first on a tie")
        XCTAssertFalse(Value(on: false, clock: 2).wins(over: Value(on: true, clock: 2)))
    }
}
