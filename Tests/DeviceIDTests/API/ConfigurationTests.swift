import Glibc
import XCTest

@testable import DeviceID

/// The override rule, one implementation for C, Python, Swift and the CLI: an override replaces
/// the environment's value for its setting; the others still come from the environment.
final class ConfigurationTests: XCTestCase {
    private func withEnvironment(_ values: [String: String], _ body: () throws -> Void) rethrows {
        for (name, value) in values { setenv(name, value, 1) }
        defer { for name in values.keys { unsetenv(name) } }
        try body()
    }

    func testAnOverrideReplacesAnInvalidEnvironmentValue() throws {
        try withEnvironment(["DEVICEID_BACKEND": "bogus", "DEVICEID_TIMEOUT_MS": "1234"]) {
            let identity = DeviceIdentity()
            XCTAssertEqual(errorCode { _ = try identity.configuration() }, .invalidArgument)
            try identity.override { $0.backend = .file }
            XCTAssertEqual(try identity.configuration().backend, .file)
            XCTAssertEqual(try identity.configuration().timeoutMilliseconds, 1234, "not overridden: the environment's")
        }
    }

    func testAnInvalidVariableNothingOverridesStillFails() throws {
        try withEnvironment(["DEVICEID_TIMEOUT_MS": "soon"]) {
            let identity = DeviceIdentity()
            try identity.override { $0.backend = .file }
            XCTAssertEqual(errorCode { _ = try identity.configuration() }, .invalidArgument)
            try identity.override { $0.timeoutMilliseconds = 100 }
            XCTAssertEqual(try identity.configuration().timeoutMilliseconds, 100)
        }
    }

    func testAnInvalidOverrideChangesNothing() throws {
        let identity = DeviceIdentity(configuration: Configuration(backend: .file, timeoutMilliseconds: 700))
        XCTAssertEqual(errorCode { try identity.override { $0.timeoutMilliseconds = 0 } }, .invalidArgument)
        XCTAssertEqual(try identity.configuration(), Configuration(backend: .file, timeoutMilliseconds: 700))
        try identity.override { $0.backend = .auto }
        XCTAssertEqual(try identity.configuration().timeoutMilliseconds, 700, "a fixed configuration is the base")
    }
}
