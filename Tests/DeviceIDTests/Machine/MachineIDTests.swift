@testable import DeviceID
import Foundation
import XCTest

final class MachineIDTests: XCTestCase {

    func testMachineIDFileContents() throws {
        let tmp = TemporaryDirectory()
        let valid = "3d1219c7c4c5404aaa1f6d2a48adfda4"
        let cases: [(String, String?, DeviceIDError.Code?)] = [
            ("valid", valid + "\n", nil),
            ("no-newline", valid, nil),
            ("uppercase", valid.uppercased() + "\n", nil),
            ("empty", "", .invalidMachineID),
            ("newline-only", "\n", .invalidMachineID),
            ("zeros", String(repeating: "0", count: 32) + "\n", .invalidMachineID),
            ("uninitialized", "uninitialized\n", .invalidMachineID),
            ("short", String(valid.dropLast()) + "\n", .invalidMachineID),
            ("long", valid + "0\n", .invalidMachineID),
            ("dashed", "3d1219c7-c4c5-404a-aa1f-6d2a48adfda4\n", .invalidMachineID),
            ("two-newlines", valid + "\n\n", .invalidMachineID),
            ("not-hex", "3d1219c7c4c5404aaa1f6d2a48adfdzz\n", .invalidMachineID),
            ("missing", nil, .notFound),
        ]
        for (name, content, expected) in cases {
            let path = tmp.sub(name)
            if let content { FileManager.default.createFile(atPath: path, contents: Data(content.utf8)) }
            if let expected {
                XCTAssertEqual(errorCode { _ = try MachineID.raw(path: path) }, expected, name)
            } else {
                XCTAssertEqual(try MachineID.raw(path: path).format(dashes: false), valid, name)
            }
        }
    }

    /// Known answers from the `systemd-id128` command on this machine's own machine ID.
    func testAppSpecificMatchesSystemdId128() throws {
        let apps = ["4a8b6d2e1f3c4e5d9a7b6c5d4e3f2a1b", "00000000000000000000000000000001",
                    "ffffffffffffffffffffffffffffffff", "8f3c2a1b-9d4e-4f6a-b7c8-d9e0f1a2b3c4",
                    "0123456789abcdef0123456789abcdef"]
        for app in apps {
            let result = try runProgram("systemd-id128", ["machine-id", "--app-specific=\(app)"])
            XCTAssertEqual(result.status, 0, "systemd-id128 failed for \(app)")
            let expected = String(decoding: result.output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            let ours = try MachineID.appSpecific(try XCTUnwrap(ID128(parsing: app)), machine: try MachineID.raw(path: "/etc/machine-id"))
            XCTAssertEqual(ours.format(dashes: false), expected, app)
            XCTAssertEqual(ours.version, 4)
        }
    }

    func testNullAppIDIsRefused() {
        XCTAssertEqual(errorCode { _ = try MachineID.appSpecific(.null) }, .invalidArgument)
        XCTAssertEqual(errorCode { _ = try MachineID.appID(from: String(repeating: "0", count: 32)) }, .invalidArgument)
        XCTAssertEqual(errorCode { _ = try MachineID.appID(from: "") }, .invalidArgument)
    }

    /// Reverse-DNS app ids map to SHA-256("deviceid.app-id:" + name)[0..<16], checked with sha256sum.
    func testReverseDNSMapping() throws {
        let name = "com.example.app"
        let result = try runProgram("sha256sum", [], stdin: Data("deviceid.app-id:\(name)".utf8))
        let hex = String(String(decoding: result.output, as: UTF8.self).prefix(32))
        XCTAssertEqual(try MachineID.appID(from: name).format(dashes: false), hex)
        XCTAssertNotEqual(try MachineID.appID(from: "com.example.app2"), try MachineID.appID(from: name))
    }
}
