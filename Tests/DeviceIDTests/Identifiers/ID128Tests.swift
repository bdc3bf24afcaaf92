@testable import DeviceID
import XCTest

final class ID128Tests: XCTestCase {
    func testRandomIsVersion4RFCVariantAndCanonical() throws {
        var seen = Set<ID128>()
        for _ in 0..<1000 {
            let id = try ID128.random()
            XCTAssertEqual(id.version, 4)
            XCTAssertTrue(id.isRFC9562Variant)
            let text = id.uuidString
            XCTAssertEqual(text.count, 36)
            XCTAssertEqual(text, text.lowercased())
            XCTAssertEqual(ID128(parsing: text), id)
            seen.insert(id)
        }
        XCTAssertEqual(seen.count, 1000, "1000 random UUIDs must be distinct")
    }

    func testFormatsAndParsing() throws {
        let id = try XCTUnwrap(ID128(parsing: "1B4E28BA-2FA1-4D2B-883F-0016D3CCA427"))
        XCTAssertEqual(id.uuidString, "1b4e28ba-2fa1-4d2b-883f-0016d3cca427")
        XCTAssertEqual(id.format(uppercase: true), "1B4E28BA-2FA1-4D2B-883F-0016D3CCA427")
        XCTAssertEqual(id.format(dashes: false), "1b4e28ba2fa14d2b883f0016d3cca427")
        XCTAssertEqual(ID128(parsing: "1b4e28ba2fa14d2b883f0016d3cca427"), id)
        XCTAssertEqual(ID128.null.uuidString, "00000000-0000-0000-0000-000000000000")
    }

    func testMalformedTextIsRefused() {
        let bad = [
            "", "1b4e28ba-2fa1-4d2b-883f-0016d3cca42", "1b4e28ba-2fa1-4d2b-883f-0016d3cca4277",
            "{1b4e28ba-2fa1-4d2b-883f-0016d3cca427}", "urn:uuid:1b4e28ba-2fa1-4d2b-883f-0016d3cca427",
            "1b4e28ba2fa1-4d2b-883f-0016d3cca427-", "1b4e28ba-2fa14-d2b-883f-0016d3cca427",
            "1b4e28ba-2fa1-4d2b-883f-0016d3cca42g", " 1b4e28ba-2fa1-4d2b-883f-0016d3cca427",
            "1b4e28ba-2fa1-4d2b-883f-0016d3cca427\n", "1b4e28ba2fa14d2b883f0016d3cca42", "é" + String(repeating: "a", count: 34),
        ]
        for text in bad { XCTAssertNil(ID128(parsing: text), "accepted \(text.debugDescription)") }
    }
}
