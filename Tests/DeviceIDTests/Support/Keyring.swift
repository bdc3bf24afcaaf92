import Foundation
import XCTest

/// The real gnome-keyring that scripts/with-keyring starts around the test run.
enum Keyring {
    struct Missing: Error {}

    /// Fails the test — never skips it — when the test run has no keyring of its own.
    static func require(file: StaticString = #filePath, line: UInt = #line) throws {
        guard ProcessInfo.processInfo.environment["DEVICEID_TEST_KEYRING"] == "1" else {
            XCTFail("this test needs the private keyring: run it through scripts/test (or scripts/with-keyring swift test)",
                    file: file, line: line)
            throw Missing()
        }
    }

    static func control(_ command: String) throws {
        let result = try runProgram(repositoryRoot + "/scripts/keyring-control", [command])
        XCTAssertEqual(result.status, 0, "keyring-control \(command)")
    }

    static func lock() throws { try control("lock") }
    static func unlock() throws { try control("unlock") }

    static func secretToolLookup(service: String, account: String) throws -> Data? {
        let result = try runProgram("secret-tool", ["lookup", "service", service, "username", account])
        return result.status == 0 ? result.output : nil
    }

    static func secretToolStore(service: String, account: String, _ value: Data) throws {
        let result = try runProgram("secret-tool", ["store", "--label=test", "service", service, "username", account], stdin: value)
        XCTAssertEqual(result.status, 0)
    }

    /// What `secret-tool search --all` prints about the items (attributes go to stderr).
    static func secretToolSearch(service: String, account: String) throws -> String {
        let result = try runProgram("secret-tool", ["search", "--all", "service", service, "username", account],
                                    mergeStderr: true)
        return String(decoding: result.output, as: UTF8.self)
    }

    static func secretToolClear(service: String, account: String) throws {
        _ = try runProgram("secret-tool", ["clear", "service", service, "username", account])
    }
}
