import XCTest
@testable import DeviceID

/// The write discipline that keeps KeePassXC from crashing (KeePassXCSaves.swift): writes one at a
/// time, each 2 s after the previous one ended or at once after quiet, and one whose wait would
/// pass the deadline is TIMED_OUT before anything is sent.
final class KeePassXCSavesTests: XCTestCase {
    override func setUp() { KeePassXCSaves.forgetWrites() }
    override func tearDown() { KeePassXCSaves.forgetWrites() }

    /// "At once": a write the discipline lets through is faster than this; one it holds waits
    /// until the save is over, about settleMilliseconds. 20 ms measured the scheduler instead: under
    /// ThreadSanitizer with the package builds beside it, a write let through took 21 ms.
    private let atOnce = KeePassXCSaves.settleMilliseconds / 4
    private let settle = KeePassXCSaves.settleMilliseconds

    /// How long from the call until the write began, and the write's own `duration` ms.
    private func timed(_ deadline: Int, writing duration: UInt32 = 0) throws -> Int {
        let start = Monotonic.milliseconds()
        return try KeePassXCSaves.write(end: start + deadline) { () throws(DeviceIDError) -> Int in
            let began = Monotonic.milliseconds() - start
            usleep(duration * 1000)
            return began
        }
    }

    func testTheFirstWriteAfterQuietGoesAtOnce() throws {
        XCTAssertLessThan(try timed(5000), atOnce)
    }

    /// 0.3.0 let a second write follow within 50 ms of the first: on a loaded machine its change
    /// reached KeePassXC during the save and crashed it.
    func testAWriteRightAfterAnotherWaitsUntilItsSaveIsOver() throws {
        _ = try timed(5000)
        let waited = try timed(5000)
        XCTAssertGreaterThanOrEqual(waited, settle - 10, "waited out the save")
        XCTAssertLessThan(waited, settle + 150)
    }

    /// The save follows the change, which KeePassXC makes in the prompt at the write's end: the
    /// wait counts from there, however long the write took.
    func testTheWaitCountsFromTheEndOfTheWrite() throws {
        _ = try timed(5000, writing: 300)
        let waited = try timed(5000)
        XCTAssertGreaterThanOrEqual(waited, settle - 10)
        XCTAssertLessThan(waited, settle + 150)
    }

    /// A write that failed on its way back may have changed the database: it counts.
    func testAFailedWriteCountsToo() throws {
        XCTAssertThrowsError(try KeePassXCSaves.write(end: Monotonic.milliseconds() + 5000) { () throws(DeviceIDError) in
            throw DeviceIDError(.keyring, "no reply")
        })
        XCTAssertGreaterThanOrEqual(try timed(5000), settle - 10)
    }

    func testAWaitPastTheDeadlineIsTimedOutWithWordsAndNothingIsWritten() throws {
        _ = try timed(5000)
        let start = Monotonic.milliseconds()
        var wrote = false
        XCTAssertThrowsError(try KeePassXCSaves.write(end: start + 500) { () throws(DeviceIDError) in wrote = true }) { error in
            let error = error as! DeviceIDError
            XCTAssertEqual(error.code, .timedOut)
            XCTAssertTrue(error.detail.contains("KeePassXC may still be saving"), error.detail)
        }
        XCTAssertFalse(wrote)
        XCTAssertLessThan(Monotonic.milliseconds() - start, 250, "refused at once, not at the 500 ms deadline")
    }

    /// Quiet, with less of the deadline left than a write needs: 0.3.0's words computed how long
    /// ago a burst began that never was (now - Int.min) and trapped on the overflow — seen once,
    /// when a deadline test's conversation reached its write late.
    func testTooLittleOfTheDeadlineLeftWhenQuietIsTimedOutNotATrap() throws {
        XCTAssertThrowsError(try KeePassXCSaves.write(end: Monotonic.milliseconds() + 10) { () throws(DeviceIDError) in }) { error in
            let error = error as! DeviceIDError
            XCTAssertEqual(error.code, .timedOut)
            XCTAssertTrue(error.detail.contains("a write to KeePassXC needs 100"), error.detail)
        }
    }

    func testAfterTheSettleTimeAWriteGoesAtOnce() throws {
        _ = try timed(5000)
        usleep(UInt32(settle + 20) * 1000)
        XCTAssertLessThan(try timed(5000), atOnce)
    }

    /// Two threads: the second's write begins only after the first's ended, and a save later.
    func testWritesOfTwoThreadsAreOneAtATime() throws {
        let first = expectation(description: "first write")
        final class Moment: @unchecked Sendable { var value = 0 }  // read after the wait for `first`
        let firstEnded = Moment()
        Thread.detachNewThread {
            _ = try? KeePassXCSaves.write(end: Monotonic.milliseconds() + 5000) { () throws(DeviceIDError) in
                usleep(300_000)
                firstEnded.value = Monotonic.milliseconds()
            }
            first.fulfill()
        }
        usleep(50_000)
        let began = try KeePassXCSaves.write(end: Monotonic.milliseconds() + 5000) { () throws(DeviceIDError) -> Int in
            Monotonic.milliseconds()
        }
        wait(for: [first], timeout: 5)
        XCTAssertGreaterThan(firstEnded.value, 0)
        XCTAssertGreaterThanOrEqual(began - firstEnded.value, settle - 10)
    }
}
