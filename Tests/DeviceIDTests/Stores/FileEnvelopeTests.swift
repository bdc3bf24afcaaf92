@testable import DeviceID
import XCTest

final class FileEnvelopeTests: XCTestCase {
    let key = StoreKey.secret(service: "svc", account: "acct")

    func testRoundTripIsBinarySafe() throws {
        for value: [UInt8] in [[], [0], Array(0...255), [UInt8](repeating: 0xFF, count: FileEnvelope.maximumValueSize)] {
            let bytes = try FileEnvelope.encode(key: key, value: value)
            XCTAssertEqual(try FileEnvelope.decode(bytes, expecting: key), value)
        }
    }

    func testEveryFlippedBitIsDetected() throws {
        let bytes = try FileEnvelope.encode(key: key, value: Array("a value".utf8))
        for index in bytes.indices {
            var damaged = bytes
            damaged[index] ^= 0x01
            XCTAssertThrowsError(try FileEnvelope.decode(damaged, expecting: key), "byte \(index)") {
                XCTAssertEqual(($0 as? DeviceIDError)?.code, .corrupt)
            }
        }
    }

    func testEveryTruncationAndExtensionIsDetected() throws {
        let bytes = try FileEnvelope.encode(key: key, value: Array("a value".utf8))
        for length in 0..<bytes.count {
            XCTAssertEqual(errorCode { _ = try FileEnvelope.decode(Array(bytes.prefix(length)), expecting: key) },
                           .corrupt, "length \(length)")
        }
        XCTAssertEqual(errorCode { _ = try FileEnvelope.decode(bytes + [0], expecting: key) }, .corrupt)
    }

    func testAnotherItemsFileIsRefused() throws {
        let bytes = try FileEnvelope.encode(key: key, value: [1, 2, 3])
        XCTAssertThrowsError(try FileEnvelope.decode(bytes, expecting: .secret(service: "svc", account: "other"))) {
            XCTAssertEqual(($0 as? DeviceIDError)?.code, .corrupt)
        }
        XCTAssertEqual(errorCode { _ = try FileEnvelope.decode(bytes, expecting: .identifier(scope: "app", name: "acct")) },
                       .corrupt)
    }
}
