@testable import DeviceID
import XCTest

/// `IdentifierKeeper.decide` — the merge rule of docs/STATE.md as a pure function — tested
/// directly: for each kind of answer each store can give (a record, a tombstone, both, none, not
/// configured, unreachable, failed; a corrupt copy; 0.1.0's keyring form; root's legacy store; a
/// mirror confirmed freshly, long ago, in the future or never), the decision's every value: use,
/// fail or mint; the origin; which stores are repaired; the generation of a mint; whether the answer
/// is provisional. Each test names the rule of docs/STATE.md it checks ("The merge rule (get)"
/// rules 1–4, the dead-record preamble, mirror-first, the explicit backends; invariants I1 and I2).
/// I3 (settings), I4 (location) and I5 (UTF-8 names) are not `decide`'s: see StateModelTests,
/// ConfigurationTests and the Python suite. What `resolve` does with a decision is in
/// IdentifierKeeperTests.
final class DecisionTableTests: XCTestCase {
    private typealias Keeper = IdentifierKeeper
    private typealias Held = IdentifierKeeper.Held
    private typealias Sighting = IdentifierKeeper.Sighting
    private typealias Answer = Stores.Answer<IdentifierKeeper.Held>

    private let tmp = TemporaryDirectory()
    private let now: UInt64 = 1_800_000_000
    private let day: UInt64 = 86_400

    /// A keeper of the given backend; `decide` reads only its configuration (which stores, the
    /// re-check interval), never a store.
    private func keeper(_ selection: Stores.Selection = .keyringAndFile, recheck: UInt32 = 86_400) throws -> Keeper {
        Keeper(stores: try Stores(selection, timeoutMilliseconds: 1000,
                                  storeDirectory: tmp.path, mirrorRecheckSeconds: recheck))
    }

    private func record(generation: UInt64 = 0, created: UInt64 = 1000, confirmed: UInt64? = nil) throws -> IdentifierRecord {
        var r = IdentifierRecord(id: try ID128.random(), created: created, generation: generation)
        r.confirmed = confirmed
        return r
    }

    private func confirmed(_ r: IdentifierRecord, _ at: UInt64?) -> IdentifierRecord {
        var copy = r
        copy.confirmed = at
        return copy
    }

    // The answers a store can give.
    private func found(_ r: IdentifierRecord) -> Answer { .found(Held(record: r)) }
    private func tombstone(_ n: UInt64) -> Answer { .found(Held(tombstone: n)) }
    /// A keyring whose clean-up after a write was interrupted: a record and a tombstone.
    private func both(_ r: IdentifierRecord, tombstone n: UInt64) -> Answer { .found(Held(record: r, tombstone: n)) }
    private let locked = DeviceIDError(.locked, "the collection is locked")
    private let corrupt = DeviceIDError(.corrupt, "bad checksum")
    private let io = DeviceIDError(.io, "cannot read")
    private let absent = DeviceIDError.noKeyringHere("no session bus")

    /// A decision as a value, to compare whole.
    private enum Outcome: Equatable {
        case use(ID128, created: UInt64?, generation: UInt64, Keeper.Origin, repair: [Keeper.Target], provisional: Bool)
        case fail(DeviceIDError)
        case mint(into: [Keeper.Target], generation: UInt64, provisional: Bool)

        init(_ decision: Keeper.Decision) {
            switch decision {
            case .use(let r, let origin, let repair, let provisional):
                self = .use(r.id, created: r.created, generation: r.generation, origin, repair: repair, provisional: provisional)
            case .fail(let error): self = .fail(error)
            case .mint(let targets, let generation, let provisional):
                self = .mint(into: targets, generation: generation, provisional: provisional)
            }
        }

        static func use(_ r: IdentifierRecord, _ origin: Keeper.Origin, repair: [Keeper.Target], provisional: Bool) -> Outcome {
            .use(r.id, created: r.created, generation: r.generation, origin, repair: repair, provisional: provisional)
        }
    }

    private func decide(_ sighting: Sighting, _ keeper: Keeper? = nil, now: UInt64? = nil) throws -> Outcome {
        Outcome(try (keeper ?? self.keeper()).decide(sighting, now: now ?? self.now))
    }

    private func check(_ sighting: Sighting, _ expected: Outcome, _ keeper: Keeper, _ why: String,
                       file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(try decide(sighting, keeper), expected, why, file: file, line: line)
    }

    /// As above, in `auto` with a re-check interval of a day.
    private func check(_ sighting: Sighting, _ expected: Outcome, _ why: String,
                       file: StaticString = #filePath, line: UInt = #line) throws {
        try check(sighting, expected, try keeper(), why, file: file, line: line)
    }

    // MARK: Rule 1 — the keyring holds a live record: it is the answer, and the mirror receives it

    // MARK: Rule 7: copies (a this-device-only record another TPM sealed)

    private let copiedError = DeviceIDError(.copied, "it was sealed on another machine")
    private func copy(generation: UInt64 = 0) -> Answer {
        .found(Held(copied: Keeper.Copied(generation: generation, error: copiedError)))
    }

    func testRule7ACopyInEveryStoreIsCopiedAndNothingIsMinted() throws {
        let keeper = try keeper()
        try check(Sighting(keyring: copy(), file: copy()), .fail(copiedError), keeper, "rule 7: copies in K and M")
        try check(Sighting(keyring: .empty, file: copy()), .fail(copiedError), keeper, "rule 7: K none, M a copy: no mint")
        try check(Sighting(keyring: copy(), file: .empty), .fail(copiedError), keeper, "rule 7: K a copy, M none: no mint")
        try check(Sighting(keyring: .notConfigured, file: copy()), .fail(copiedError), try self.keeper(.fileOnly),
                  "rule 7: the file backend")
    }

    func testRule7ALiveRecordElsewhereAnswersAndAMirrorCopyReceivesTheKeyrings() throws {
        let keeper = try keeper()
        let k = try record()
        try check(Sighting(keyring: found(k), file: copy()), .use(k, .keyring, repair: [.file], provisional: false), keeper,
                  "rules 1 and 7: K's record answers; M's copy is replaced")
        let f = try record()
        try check(Sighting(keyring: copy(), file: found(f)), .use(f, .file, repair: [], provisional: true), keeper,
                  "rules 3 and 7: K's copy counts as a failed K; M answers, provisionally, and K is not written")
    }

    func testRule7ACopyBelowATombstoneIsDeadAndAResetCountsItsGeneration() throws {
        let keeper = try keeper()
        try check(Sighting(keyring: tombstone(3), file: copy(generation: 2)), .mint(into: [.keyring, .file], generation: 3,
                  provisional: false), keeper, "a copy older than a reset is dead: a mint of the reset's generation")
        XCTAssertEqual(Sighting(keyring: .empty, file: copy(generation: 5)).highestGeneration, 5,
                       "a reset exceeds a copy's generation")
    }

    func testThisDeviceOnlySealsALivePortableAnswerInPlace() throws {
        let keeper = Keeper(stores: try Stores(.keyringAndFile, timeoutMilliseconds: 1000, storeDirectory: tmp.path,
                                               protection: .thisDeviceOnly))
        let k = try record()
        guard case .use(let r, .keyring, let repair, false) = keeper.decide(Sighting(keyring: found(k), file: found(confirmed(k, now))), now: now)
        else { return XCTFail("expected K's record") }
        XCTAssertEqual(r.id, k.id, "the same ID")
        XCTAssertTrue(r.sealed, "sealed in place")
        XCTAssertEqual(repair, [.keyring, .file], "both stores rewritten sealed")
        var sealed = k
        sealed.sealed = true
        guard case .use(_, _, let none, _) = keeper.decide(Sighting(keyring: found(sealed), file: found(confirmed(sealed, now))), now: now)
        else { return XCTFail("expected K's record") }
        XCTAssertEqual(none, [], "sealed already, and the mirror agrees: nothing to write")
    }

    /// docs/STATE.md, "Protection classes" (a seal in place is a change): a keyring that may hold
    /// the portable ID and cannot answer fails it, writing nothing; one holding only another
    /// machine's copy, or a corrupt item, does not.
    func testASealInPlaceReachesTheKeyringOrFailsWithItsWords() throws {
        let keeper = Keeper(stores: try Stores(.keyringAndFile, timeoutMilliseconds: 1000, storeDirectory: tmp.path,
                                               protection: .thisDeviceOnly))
        let m = try record()
        for silent in [locked, io, DeviceIDError(.unavailable, "the keyring cannot be reached")] {
            guard case .fail(let error) = keeper.decide(Sighting(keyring: .failed(silent), file: found(m)), now: now)
            else { return XCTFail("a seal in place while K is silent (\(silent.code)) must fail") }
            XCTAssertEqual(error.code, silent.code, "K's status")
            XCTAssertTrue(error.detail.contains(silent.detail) && error.detail.contains("travel with the home"), error.detail)
        }
        let harmless: [(Answer, String)] = [(copy(), "K holds another machine's copy"), (.failed(corrupt), "K holds a corrupt item")]
        for (k, why) in harmless {
            guard case .use(let r, .file, let repair, _) = keeper.decide(Sighting(keyring: k, file: found(m)), now: now)
            else { return XCTFail("\(why): M's record answers, sealed") }
            XCTAssertTrue(r.sealed && r.id == m.id, why)
            XCTAssertEqual(repair, k.failure?.code == .corrupt ? [.keyring, .file] : [.file], why)
        }
        // No keyring here (auto, no marker): M alone is sealed, as before.
        guard case .use(let r, .file, let repair, true) = keeper.decide(Sighting(keyring: .unreachable(absent), file: found(m)),
                                                                       now: now)
        else { return XCTFail("an absent keyring holds nothing: M sealed, provisional") }
        XCTAssertTrue(r.sealed)
        XCTAssertEqual(repair, [.file])
        // Sealed already: not a change, and a silent K leaves M's sealed record to answer (rule 3).
        var sealed = m
        sealed.sealed = true
        guard case .use(_, .file, let none, true) = keeper.decide(Sighting(keyring: .failed(locked), file: found(sealed)), now: now)
        else { return XCTFail("a sealed mirror answers provisionally while K is silent") }
        XCTAssertEqual(none, [])
    }

    /// Through the file backend with the marker, the first decision of a seal in place or a mint is
    /// a write, which `settleUnderLock` makes over the keyring too (`Decision.writes`).
    func testThroughTheFileBackendASealInPlaceAndAMintAreWrites() throws {
        let keeper = Keeper(stores: try Stores(.fileOnly, timeoutMilliseconds: 1000, storeDirectory: tmp.path,
                                               protection: .thisDeviceOnly))
        let m = try record()
        var sealed = m
        sealed.sealed = true
        XCTAssertTrue(keeper.decide(Sighting(keyring: .notConfigured, file: found(m), keyringUnasked: true), now: now).writes)
        XCTAssertTrue(keeper.decide(Sighting(keyring: .notConfigured, file: .empty, keyringUnasked: true), now: now).writes)
        XCTAssertFalse(keeper.decide(Sighting(keyring: .notConfigured, file: found(sealed), keyringUnasked: true), now: now).writes,
                       "sealed already: M answers alone, without D-Bus")
    }

    func testRule1TheKeyringsRecordAnswersAndAMirrorWithoutItReceivesIt() throws {
        let k = try record()
        try check(Sighting(keyring: found(k), file: .empty), .use(k, .keyring, repair: [.file], provisional: false),
                  "rule 1: M lacks it")
    }

    func testRule1TheKeyringIsTheAuthorityOverAMirrorHoldingAnotherID() throws {
        // Older (0.2.0's "older wins") or newer, of a higher generation too: the keyring's live record answers.
        let k = try record(generation: 1, created: 2000)
        for m in [try record(created: 10), try record(generation: 1, created: 9000, confirmed: now - 10),
                  try record(generation: 5, created: 2000)] {
            try check(Sighting(keyring: found(k), file: found(m)), .use(k, .keyring, repair: [.file], provisional: false),
                      "rule 1: M holds another ID (generation \(m.generation)); a mirror never overrides K")
        }
        // The same ID, but a copy that differs (another `created`): rewritten.
        var same = k
        same.created = 1
        same.confirmed = now - 10
        try check(Sighting(keyring: found(k), file: found(same)), .use(k, .keyring, repair: [.file], provisional: false),
                  "rule 1: M's copy differs from K's")
    }

    func testRule1AMirrorHoldingADeadRecordOrAnOlderTombstoneReceivesTheLiveOne() throws {
        // K holds the live record of generation 2 beside a tombstone 2 (an interrupted clean-up):
        // M's generation-1 record is dead (1 < T = 2).
        let k = try record(generation: 2)
        try check(Sighting(keyring: both(k, tombstone: 2), file: found(try record(generation: 1, confirmed: now))),
                  .use(k, .keyring, repair: [.file], provisional: false), "rule 1 + dead records: M's dead copy is replaced")
        try check(Sighting(keyring: found(k), file: tombstone(2)), .use(k, .keyring, repair: [.file], provisional: false),
                  "rule 1: M's tombstone 2 does not kill generation 2, and M receives the live record")
    }

    func testRule1ACorruptMirrorIsReplacedAndAMirrorThatCannotBeReadIsLeftAlone() throws {
        let k = try record()
        try check(Sighting(keyring: found(k), file: .failed(corrupt)), .use(k, .keyring, repair: [.file], provisional: false),
                  "rule 1: M holds a corrupt one")
        try check(Sighting(keyring: found(k), file: .failed(io)), .use(k, .keyring, repair: [], provisional: false),
                  "rule 1: M failed (not corrupt): nothing is written over a store that could not answer")
        try check(Sighting(keyring: found(k), file: .notConfigured), .use(k, .keyring, repair: [], provisional: false),
                  "secret-service backend with no mirror to heed")
    }

    func testRule1A010KeyringItemIsRewrittenInTheCurrentForm() throws {
        let k = try record()
        try check(Sighting(keyring: found(k), file: .empty, keyringIsLegacy: true),
                  .use(k, .keyring, repair: [.keyring, .file], provisional: false), "0.1.0 keyring form, M lacks it")
        try check(Sighting(keyring: found(k), file: found(confirmed(k, now - 10)), keyringIsLegacy: true),
                  .use(k, .keyring, repair: [.keyring], provisional: false), "0.1.0 keyring form, M current")
    }

    func testRule1RootsLegacyStoreIsCopiedIntoTheDefaultDirectoryEvenWhenItAgrees() throws {
        let k = try record()
        try check(Sighting(keyring: found(k), file: found(confirmed(k, now - 10)), fileIsLegacy: true),
                  .use(k, .keyring, repair: [.file], provisional: false),
                  "\"Stores\": what is found in root's legacy store is copied into /var/lib/deviceid")
    }

    // MARK: Mirror-first — a mirror the keyring confirmed within the re-check interval

    func testMirrorFirstAMirrorConfirmedWithinTheIntervalNeedsNoWriteAndAnyOtherIsReconfirmed() throws {
        let k = try record()
        let rows: [(UInt64?, [Keeper.Target], String)] = [
            (now - 10, [], "confirmed 10 s ago"),
            (now, [], "confirmed now"),
            (now - (day - 1), [], "the last second of the interval"),
            (now - day, [.file], "exactly one interval ago: stale"),
            (now - 30 * day, [.file], "long ago"),
            (now + 1, [.file], "in the future (the clock stepped back): not fresh"),
            (nil, [.file], "never confirmed"),
        ]
        for (at, repair, why) in rows {
            try check(Sighting(keyring: found(k), file: found(confirmed(k, at))),
                      .use(k, .keyring, repair: repair, provisional: false), "mirror-first: \(why)")
        }
    }

    func testWithoutMirrorFirstAnyConfirmedCopyIsCurrent() throws {
        // Re-check interval 0 (mirror-first off): the mirror never answers alone, so the age of its
        // confirmation does not matter; an unconfirmed copy still receives one.
        let k = try record()
        let off = try keeper(recheck: 0)
        try check(Sighting(keyring: found(k), file: found(confirmed(k, now - 30 * day))),
                  .use(k, .keyring, repair: [], provisional: false), off, "mirror-first off, confirmed long ago")
        try check(Sighting(keyring: found(k), file: found(k)), .use(k, .keyring, repair: [.file], provisional: false), off,
                  "mirror-first off, never confirmed")
    }

    // MARK: Rule 2 — the keyring answered without a live record: the mirror's live one answers, and K receives it

    func testRule2AnEmptyKeyringReceivesTheMirrorsRecord() throws {
        let m = try record()  // unconfirmed: the keyring appeared after the ID was minted without it
        try check(Sighting(keyring: .empty, file: found(m)), .use(m, .file, repair: [.keyring, .file], provisional: false),
                  "rule 2: K none")
    }

    func testRule2AKeyringHoldingATombstoneOrOnlyDeadRecordsReceivesTheMirrorsLiveRecord() throws {
        let m = try record(generation: 3, confirmed: now - 10)
        try check(Sighting(keyring: tombstone(3), file: found(m)), .use(m, .file, repair: [.keyring, .file], provisional: false),
                  "rule 2: K holds a tombstone of M's generation (M's record was minted after that reset)")
        try check(Sighting(keyring: both(try record(generation: 1), tombstone: 3), file: found(m)),
                  .use(m, .file, repair: [.keyring, .file], provisional: false), "rule 2: K holds only a dead record")
    }

    func testRule2ACorruptKeyringItemIsReplacedByTheMirrorsRecord() throws {
        let m = try record()
        try check(Sighting(keyring: .failed(corrupt), file: found(m)), .use(m, .file, repair: [.keyring, .file], provisional: false),
                  "\"A corrupt K item is replaced by M's live record\"")
    }

    func testRule2RootsLegacyRecordGoesToTheKeyringAndTheDefaultDirectory() throws {
        let m = try record()
        try check(Sighting(keyring: .empty, file: found(m), fileIsLegacy: true),
                  .use(m, .file, repair: [.keyring, .file], provisional: false), "rule 2 with root's legacy store")
    }

    func testRule2TheSecretServiceBackendAdoptsTheDefaultDirectorysRecord() throws {
        // `look` puts the default directory's record in `file` for this backend; `write(.file)` is
        // a no-op there (no file store).
        let m = try record()
        try check(Sighting(keyring: .empty, file: found(m)), .use(m, .file, repair: [.keyring, .file], provisional: false),
                  try keeper(.keyringOnly), "explicit backends: secret-service adopts M's live record when K has none")
    }

    // MARK: Rule 3 — the keyring failed or is absent: the mirror answers, writing nothing

    func testRule3ASilentOrAbsentKeyringLeavesTheMirrorToAnswerProvisionallyUnlessFreshlyConfirmed() throws {
        let m = try record()
        let rows: [(UInt64?, Bool, String)] = [
            (nil, true, "never confirmed"),
            (now - 10, false, "confirmed within the interval: as fresh as a mirror-first answer"),
            (now - day, true, "confirmed one interval ago"),
            (now + 10, true, "confirmed in the future"),
        ]
        for keyring in [Answer.failed(locked), .failed(DeviceIDError(.timedOut, "frozen")), .unreachable(absent)] {
            for (at, provisional, why) in rows {
                try check(Sighting(keyring: keyring, file: found(confirmed(m, at))),
                          .use(m, .file, repair: [], provisional: provisional), "rule 3, K \(keyring): \(why)")
            }
        }
    }

    func testRule3RootsLegacyRecordIsStillCopiedIntoTheDefaultDirectory() throws {
        let m = try record()
        try check(Sighting(keyring: .failed(locked), file: found(m), fileIsLegacy: true),
                  .use(m, .file, repair: [.file], provisional: true), "rule 3 with root's legacy store")
    }

    func testRule3TheFileBackendIsProvisionalOnlyWhenTheStoreKnowsAKeyringThatDidNotConfirm() throws {
        let m = try record()
        let file = try keeper(.fileOnly)
        try check(Sighting(keyring: .notConfigured, file: found(m)), .use(m, .file, repair: [], provisional: false), file,
                  "explicit backends: file, no keyring marker: final")
        try check(Sighting(keyring: .notConfigured, file: found(m), keyringUnasked: true),
                  .use(m, .file, repair: [], provisional: true), file, "file backend, marker, never confirmed")
        try check(Sighting(keyring: .notConfigured, file: found(confirmed(m, now - 10)), keyringUnasked: true),
                  .use(m, .file, repair: [], provisional: false), file, "file backend, marker, confirmed within the interval")
        try check(Sighting(keyring: .notConfigured, file: found(confirmed(m, now - 10)), keyringUnasked: true),
                  .use(m, .file, repair: [], provisional: true), try keeper(.fileOnly, recheck: 0),
                  "file backend, marker, re-check interval 0: no confirmation is fresh")
    }

    // MARK: Rule 4 — no live record anywhere: a failed store's error, else mint

    func testRule4NothingIsMintedWhileTheKeyringIsSilent() throws {
        for file in [Answer.empty, tombstone(4), .failed(io)] {
            try check(Sighting(keyring: .failed(locked), file: file), .fail(locked),
                      "rule 4 / I1: K failed (M \(file)): K's error, nothing minted")
        }
        try check(Sighting(keyring: .failed(locked), file: .found(Held(record: try record(generation: 0), tombstone: 1))),
                  .fail(locked), "rule 4 / I1: K failed, M holds only a dead record")
    }

    func testRule4AFailedMirrorStopsTheMint() throws {
        try check(Sighting(keyring: .empty, file: .failed(io)), .fail(io), "rule 4 / I1: M failed")
        try check(Sighting(keyring: tombstone(2), file: .failed(corrupt)), .fail(corrupt),
                  "rule 4: a corrupt M with no live record anywhere stays an error")
        try check(Sighting(keyring: .unreachable(absent), file: .failed(io)), .fail(io), "rule 4: K absent, M failed")
        try check(Sighting(keyring: .notConfigured, file: .failed(io)), .fail(io), try keeper(.fileOnly), "file backend, M failed")
    }

    func testRule4ACorruptKeyringItemWithNoValidCopyAnywhereIsCorrupt() throws {
        try check(Sighting(keyring: .failed(corrupt), file: .empty), .fail(corrupt), "rule 4: K corrupt, M none")
    }

    func testRule4OfTwoFailedStoresTheKeyringsErrorIsTheAnswer() throws {
        try check(Sighting(keyring: .failed(locked), file: .failed(io)), .fail(locked), "rule 4: both failed")
    }

    func testRule4EveryStoreSaidNoneMintIntoBothFinal() throws {
        try check(Sighting(keyring: .empty, file: .empty), .mint(into: [.keyring, .file], generation: 0, provisional: false),
                  "rule 4: first run")
    }

    func testRule4TheMintIsOfTheHighestTombstonesGeneration() throws {
        let rows: [(Answer, Answer, UInt64, String)] = [
            (tombstone(3), .empty, 3, "K's tombstone"),
            (.empty, tombstone(3), 3, "M's tombstone"),
            (tombstone(3), tombstone(5), 5, "the higher of two"),
            (found(try record(generation: 1)), tombstone(4), 4, "K's record is dead under M's tombstone"),
            (tombstone(2), found(try record(generation: 1, confirmed: now)), 2, "M's record is dead under K's tombstone"),
            (both(try record(generation: 6), tombstone: 7), .empty, 7, "K's record is dead under K's own tombstone"),
        ]
        for (keyring, file, generation, why) in rows {
            try check(Sighting(keyring: keyring, file: file), .mint(into: [.keyring, .file], generation: generation, provisional: false),
                      "rule 4 / I2: \(why)")
        }
    }

    func testRule4WithTheKeyringAbsentTheMintGoesToTheFileProvisionally() throws {
        try check(Sighting(keyring: .unreachable(absent), file: .empty), .mint(into: [.file], generation: 0, provisional: true),
                  "rule 4: minted with K absent it is provisional")
        try check(Sighting(keyring: .unreachable(absent), file: tombstone(2)), .mint(into: [.file], generation: 2, provisional: true),
                  "rule 4: K absent, M's tombstone 2")
    }

    func testRule4TheExplicitBackendsMintIntoTheirStore() throws {
        try check(Sighting(keyring: .empty, file: .notConfigured), .mint(into: [.keyring], generation: 0, provisional: false),
                  try keeper(.keyringOnly), "secret-service: K only")
        let file = try keeper(.fileOnly)
        try check(Sighting(keyring: .notConfigured, file: .empty), .mint(into: [.file], generation: 0, provisional: false), file,
                  "file backend, no marker")
        try check(Sighting(keyring: .notConfigured, file: .empty, keyringUnasked: true),
                  .mint(into: [.file], generation: 0, provisional: true), file,
                  "file backend: a mint is provisional when the marker says K may hold what M lacks")
    }

    func testRule4NoStoreAtAllIsAnError() throws {
        // Defensive: `look` never gives these in practice (auto always has a file store).
        try check(Sighting(keyring: .unreachable(absent), file: .notConfigured), .fail(absent), "K absent and no M: K's reason")
        try check(Sighting(keyring: .notConfigured, file: .notConfigured),
                  .fail(DeviceIDError(.unavailable, "no store is available")), "no store configured")
    }

    // MARK: Dead records and the sighting's arithmetic

    func testATombstoneKillsEveryRecordBelowItsGenerationInEitherStore() throws {
        let r0 = try record(generation: 0), r1 = try record(generation: 1)
        let s = Sighting(keyring: both(r0, tombstone: 1), file: found(r1))
        XCTAssertEqual(s.tombstone, 1, "T: the highest tombstone among the stores")
        XCTAssertNil(s.live(s.keyring), "generation 0 < T = 1: dead")
        XCTAssertEqual(s.live(s.file), r1, "generation 1 = T: live")
        XCTAssertEqual(s.highestGeneration, 1, "what a reset must exceed")
        let t = Sighting(keyring: found(try record(generation: 4)), file: tombstone(2))
        XCTAssertEqual(t.tombstone, 2)
        XCTAssertEqual(t.highestGeneration, 4, "a record's generation counts too")
        XCTAssertEqual(Sighting(keyring: .failed(locked), file: .unreachable(absent)).highestGeneration, 0,
                       "nothing seen: generation 0, as 0.1.0 and 0.2.0 wrote")
    }

    // MARK: The invariants over every combination

    /// I1 and I2 over every pair of answers the two stores can give, in each backend and with
    /// and without the keyring marker: a mint only when no store that may hold the ID failed and
    /// no live record exists, of the highest tombstone's generation, into the stores that answered;
    /// an answer that is always a live record, the keyring's when it has one; a failure only when
    /// no live record exists; nothing ever written to a store that failed (other than corrupt); an
    /// answer not vouched for by a keyring flagged provisional.
    func testI1AndI2HoldForEveryCombinationOfAnswers() throws {
        let r0 = try record(generation: 0), r1 = try record(generation: 1)
        let fresh = confirmed(try record(generation: 1), now - 10)
        let answers: [Answer] = [
            .empty, .notConfigured, .unreachable(absent), .failed(locked), .failed(corrupt), .failed(io),
            found(r0), found(r1), found(fresh), tombstone(1), tombstone(2), both(r0, tombstone: 1), both(r1, tombstone: 1),
        ]
        var rowsChecked = 0
        for selection in [Stores.Selection.keyringAndFile, .keyringOnly, .fileOnly] {
            let keeper = try keeper(selection)
            for keyring in answers {
                for file in answers {
                    for legacy in [false, true] {
                        // `look` sets keyringUnasked only where the keyring is not asked (the file backend).
                        for unasked in [false, true] where !unasked || { if case .notConfigured = keyring { true } else { false } }() {
                            let s = Sighting(keyring: keyring, file: file, keyringIsLegacy: legacy && keyring.value?.record != nil,
                                             fileIsLegacy: legacy && file.value?.record != nil, keyringUnasked: unasked)
                            try checkInvariants(s, keeper.decide(s, now: now), "\(selection) K=\(keyring) M=\(file) legacy=\(legacy) unasked=\(unasked)")
                            rowsChecked += 1
                        }
                    }
                }
            }
        }
        XCTAssertEqual(rowsChecked, 3 * (13 * 13 * 2 + 13 * 2))
    }

    private func checkInvariants(_ s: Sighting, _ decision: Keeper.Decision, _ row: String) throws {
        let keyringLive = s.live(s.keyring), fileLive = s.live(s.file)
        func failedHard(_ a: Answer) -> Bool { a.failure.map { $0.code != .corrupt } ?? false }
        let keyringAbsent = { if case .unreachable = s.keyring { return true } else { return false } }()
        /// No keyring could vouch for M's record now: K silent or absent, or unasked under the marker.
        let keyringSilent = failedHard(s.keyring) || keyringAbsent || s.keyringUnasked
        switch decision {
        case .mint(let targets, let generation, let provisional):
            XCTAssertNil(keyringLive, "I1: minted over K's live record — \(row)")
            XCTAssertNil(fileLive, "I1: minted over M's live record — \(row)")
            XCTAssertNil(s.keyring.failure, "I1: minted while K failed — \(row)")
            XCTAssertNil(s.file.failure, "I1: minted while M failed — \(row)")
            XCTAssertEqual(generation, s.tombstone, "I2: a mint is of the highest tombstone's generation — \(row)")
            XCTAssertEqual(targets, [s.keyring.answered ? [Keeper.Target.keyring] : [], s.file.answered ? [.file] : []].flatMap { $0 },
                           "rule 4: into every store that answered — \(row)")
            XCTAssertEqual(provisional, s.keyringUnasked || keyringAbsent,
                           "I1: provisional exactly when minted where no keyring could vouch for it — \(row)")
        case .use(let r, let origin, let repair, let provisional):
            XCTAssertGreaterThanOrEqual(r.generation, s.tombstone, "I2: a dead record answered — \(row)")
            if let keyringLive {
                XCTAssertEqual(r, keyringLive, "rule 1: the keyring is the authority — \(row)")
                XCTAssertEqual(origin, .keyring, row)
                XCTAssertFalse(provisional, "rule 1: K's own record is final — \(row)")
            } else {
                XCTAssertEqual(r, fileLive, "rules 2-3: M's live record — \(row)")
                XCTAssertEqual(origin, .file, row)
                if provisional { XCTAssertFalse(s.keyring.answered, "rule 2: K answered and receives it: final — \(row)") }
                let fresh = r.confirmed.map { $0 <= now && now - $0 < day } ?? false
                if keyringSilent && !s.keyring.answered && !fresh {
                    XCTAssertTrue(provisional, "I1/rule 3: read while no keyring could vouch for it — \(row)")
                }
            }
            if repair.contains(.keyring) { XCTAssertFalse(failedHard(s.keyring), "nothing written to a failed K — \(row)") }
            if repair.contains(.file) { XCTAssertFalse(failedHard(s.file), "nothing written to a failed M — \(row)") }
            XCTAssertEqual(repair, repair.filter { $0 == .keyring } + repair.filter { $0 == .file }, "keyring first — \(row)")
        case .fail:
            XCTAssertNil(keyringLive, "failed although K holds a live record — \(row)")
            XCTAssertNil(fileLive, "failed although M's live record could answer — \(row)")
        }
    }
}
