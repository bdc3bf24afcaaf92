import XCTest
@testable import DeviceID

/// The write discipline that keeps KeePassXC from crashing (KeePassXCSaves.swift): a write within
/// 50 ms of its burst's first goes at once, a later one waits until 2 s after the burst began, and
/// one whose wait would pass the deadline is TIMED_OUT before anything is sent.
final class KeePassXCSavesTests: XCTestCase {
    override func setUp() { KeePassXCSaves.forgetBursts() }
    override func tearDown() { KeePassXCSaves.forgetBursts() }

    /// "At once": a write the discipline lets through is faster than this; one it holds waits
    /// until the save is over, about settleMilliseconds. 20 ms measured the scheduler instead: under
    /// ThreadSanitizer with the package builds beside it, a write let through took 21 ms.
    private let atOnce = KeePassXCSaves.settleMilliseconds / 4

    private func timed(_ deadline: Int) throws -> Int {
        let start = Monotonic.milliseconds()
        try KeePassXCSaves.beforeWrite(end: start + deadline)
        return Monotonic.milliseconds() - start
    }

    func testWritesOfOneBurstGoAtOnce() throws {
        XCTAssertLessThan(try timed(5000), atOnce, "the first write after quiet")
        XCTAssertLessThan(try timed(5000), atOnce, "a second within 50 ms: KeePassXC has not begun saving")
    }

    func testAWriteInsideTheSaveWindowWaitsUntilTheSaveIsOver() throws {
        _ = try timed(5000)
        usleep(120_000)
        let waited = try timed(5000)
        XCTAssertGreaterThanOrEqual(waited + 120, KeePassXCSaves.settleMilliseconds - 10, "waited out the save")
        XCTAssertLessThan(waited + 120, KeePassXCSaves.settleMilliseconds + 150)
        XCTAssertLessThan(try timed(5000), atOnce, "the write after the wait began a new burst, and this one is in it")
    }

    func testAWaitPastTheDeadlineIsTimedOutWithWords() throws {
        _ = try timed(5000)
        usleep(120_000)
        let start = Monotonic.milliseconds()
        XCTAssertThrowsError(try KeePassXCSaves.beforeWrite(end: start + 500)) { error in
            let error = error as! DeviceIDError
            XCTAssertEqual(error.code, .timedOut)
            XCTAssertTrue(error.detail.contains("KeePassXC may still be saving"), error.detail)
        }
        XCTAssertLessThan(Monotonic.milliseconds() - start, 250, "refused at once, not at the 500 ms deadline")
    }

    /// Quiet, with less of the deadline left than a write needs: 0.3.0's words computed how long
    /// ago a burst began that never was (now - Int.min) and trapped on the overflow — seen once,
    /// when a deadline test's conversation reached its write late.
    func testTooLittleOfTheDeadlineLeftWhenQuietIsTimedOutNotATrap() throws {
        XCTAssertThrowsError(try KeePassXCSaves.beforeWrite(end: Monotonic.milliseconds() + 10)) { error in
            let error = error as! DeviceIDError
            XCTAssertEqual(error.code, .timedOut)
            XCTAssertTrue(error.detail.contains("a write to KeePassXC needs 100"), error.detail)
        }
    }

    func testAfterTheSettleTimeAWriteGoesAtOnce() throws {
        _ = try timed(5000)
        usleep(UInt32(KeePassXCSaves.settleMilliseconds + 20) * 1000)
        XCTAssertLessThan(try timed(5000), atOnce)
    }
}
