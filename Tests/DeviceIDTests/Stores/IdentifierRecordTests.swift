@testable import DeviceID
import XCTest

final class IdentifierRecordTests: XCTestCase {
    let uuid = "1b4e28ba-2fa1-4d2b-883f-0016d3cca427"

    func testRoundTrip() throws {
        let record = IdentifierRecord(id: try XCTUnwrap(ID128(parsing: uuid)), created: 1_764_425_600,
                                      machine: Array(0..<16))
        let text = String(decoding: record.serialized(), as: UTF8.self)
        XCTAssertEqual(text, "\(uuid)\ncreated=1764425600\nmachine=000102030405060708090a0b0c0d0e0f\n")
        XCTAssertEqual(try IdentifierRecord(parsing: record.serialized()), record)
    }

    func testBareUUIDFromSecretToolIsAccepted() throws {
        let record = try IdentifierRecord(parsing: Array(uuid.utf8))
        XCTAssertEqual(record.id.uuidString, uuid)
        XCTAssertNil(record.created)
    }

    func testUnknownKeysArePreserved() throws {
        let bytes = Array("\(uuid)\ncreated=5\nfuture-key=abc\n".utf8)
        XCTAssertEqual(try IdentifierRecord(parsing: bytes).serialized(), bytes)
    }

    func testMalformedRecordsAreCorrupt() {
        let bad = [
            "", "\n", uuid.uppercased(), "not-a-uuid", "\(uuid)\n\n", "\(uuid)\ncreated", "\(uuid)\ncreated=",
            "\(uuid)\ncreated=-1", "\(uuid)\ncreated=1x", "\(uuid)\ncreated=99999999999999999999999",
            "\(uuid)\ncreated=1\ncreated=2", "\(uuid)\nmachine=00", "\(uuid)\nmachine=zz0102030405060708090a0b0c0d0e0f",
            "\(uuid)\nKEY=1", "\(uuid)\n=1", "\(uuid)\nk=a b", " \(uuid)", "\(uuid) ", "\(uuid)\r\n",
            uuid + "\n" + String(repeating: "x=y\n", count: 2000),
        ]
        for text in bad {
            XCTAssertThrowsError(try IdentifierRecord(parsing: Array(text.utf8)), text.debugDescription) { error in
                XCTAssertEqual((error as? DeviceIDError)?.code, .corrupt, text.debugDescription)
            }
        }
    }

    func testTheOlderCopyIsPreferred() throws {
        let a = IdentifierRecord(id: try ID128.random(), created: 100)
        let b = IdentifierRecord(id: try ID128.random(), created: 200)
        let undated = IdentifierRecord(id: try ID128.random(), created: nil)
        XCTAssertEqual(a.preferred(over: b), a)
        XCTAssertEqual(b.preferred(over: a), a)
        XCTAssertEqual(undated.preferred(over: a), a)
        XCTAssertEqual(a.preferred(over: undated), a)
        let tie = IdentifierRecord(id: try ID128.random(), created: 100)
        XCTAssertEqual(a.preferred(over: tie), a, "a tie keeps the first store's copy")
    }
}
