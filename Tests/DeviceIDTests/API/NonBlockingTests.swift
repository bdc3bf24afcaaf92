@testable import DeviceID
import Foundation
import XCTest

/// The blocking form of a call that has an `async` overload, from async code: a synchronous
/// closure is a synchronous context, where Swift picks the blocking overload.
private func synchronously<T>(_ body: () throws(DeviceIDError) -> T) throws(DeviceIDError) -> T {
    try body()
}

/// The async calls wait on threads of their own, never on the cooperative pool's.
final class NonBlockingTests: XCTestCase {
    /// More blocked calls than the pool has threads, released by a task that needs the pool: if a
    /// call blocked a pool thread, the releasing task could never run; each call then gives up
    /// after 30 s, and the test fails instead of hanging.
    func testBlockedCallsLeaveTheCooperativePoolFree() async throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        let (readEnd, writeEnd) = (fds[0], fds[1])
        defer { close(readEnd); close(writeEnd) }
        let blocked = ProcessInfo.processInfo.activeProcessorCount + 2
        let results = try await withThrowingTaskGroup(of: UInt8.self) { group in
            for _ in 0..<blocked {
                group.addTask {
                    try await DeviceIdentity.NonBlocking.onOwnThread { () throws(DeviceIDError) -> UInt8 in
                        var ready = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
                        guard poll(&ready, 1, 30_000) == 1 else {
                            throw DeviceIDError(.timedOut, "never released: a pool thread was blocked")
                        }
                        var byte: UInt8 = 0
                        guard read(readEnd, &byte, 1) == 1 else { throw DeviceIDError(.io, "pipe") }
                        return byte
                    }
                }
            }
            group.addTask {
                await Task.yield()
                for i in 0..<blocked { var b = UInt8(i); _ = write(writeEnd, &b, 1) }
                return 255
            }
            var all = [UInt8]()
            for try await value in group { all.append(value) }
            return all
        }
        XCTAssertEqual(results.sorted(), Array(0..<UInt8(blocked)) + [255])
    }

    func testTheAsyncCallsGiveTheSameAnswersAsTheBlockingOnes() async throws {
        let tmp = TemporaryDirectory()
        let identity = makeIdentity(.file, store: tmp.path)
        let first = try await identity.nonblocking.stableID(for: "com.example.async")
        XCTAssertEqual(first.source, .created)
        XCTAssertEqual(try synchronously { () throws(DeviceIDError) in try identity.stableID(for: "com.example.async") }.id,
                       first.id)
        let vendor = try await identity.nonblocking.vendorID(for: "com.example").id
        XCTAssertEqual(vendor, try identity.vendorID(for: "com.example").id)
        try await identity.nonblocking.storeSecret(Array("s".utf8), service: "svc", account: "acc")
        let secret = try await identity.nonblocking.lookupSecret(service: "svc", account: "acc")
        XCTAssertEqual(secret, Array("s".utf8))
        let deleted = try await identity.nonblocking.deleteSecret(service: "svc", account: "acc")
        XCTAssertTrue(deleted)
        try await identity.nonblocking.reset(appID: "com.example.async")
        let minted = try await identity.nonblocking.stableID(for: "com.example.async").id
        XCTAssertNotEqual(minted, first.id)
        let environment = try await identity.nonblocking.environment()
        let blocking = try identity.environment()
        XCTAssertEqual(environment.storePath, tmp.path)
        XCTAssertEqual(environment.storeLocation, blocking.storeLocation)
        XCTAssertEqual(environment.stableIDLocation, blocking.storeLocation, "the file backend keeps IDs in the store")
        XCTAssertEqual(try synchronously { () throws(DeviceIDError) in try identity.stableID(for: "com.example.async") }
                           .location, blocking.storeLocation)
        do {
            _ = try await identity.nonblocking.stableID(for: "")
            XCTFail("an empty app id is refused")
        } catch {
            XCTAssertEqual(error.code, .invalidArgument)
        }
    }

    /// The async overloads of the blocking names: `try await` picks them in an async context.
    func testTheAsyncOverloadsAreTheNonblockingCalls() async throws {
        let tmp = TemporaryDirectory()
        let identity = makeIdentity(.file, store: tmp.path)
        let first = try await identity.stableID(for: "com.example.overload")
        XCTAssertEqual(first.source, .created)
        let again = try await identity.stableID(for: "com.example.overload")
        XCTAssertEqual(again.id, first.id)
        try await identity.storeSecret("pässword", service: "svc", account: "acc")
        let text = try await identity.lookupSecretString(service: "svc", account: "acc")
        XCTAssertEqual(text, "pässword")
        let bytes = try await identity.lookupSecret(service: "svc", account: "acc")
        XCTAssertEqual(bytes, Array("pässword".utf8))
        let deleted = try await identity.deleteSecret(service: "svc", account: "acc")
        XCTAssertTrue(deleted)
        try await identity.reset(appID: "com.example.overload")
        let minted = try await identity.stableID(for: "com.example.overload")
        XCTAssertNotEqual(minted.id, first.id)
    }

    func testStringSecretsAreUTF8AndOtherBytesAreCorrupt() throws {
        let tmp = TemporaryDirectory()
        let identity = makeIdentity(.file, store: tmp.path)
        try identity.storeSecret("tökén ✓", service: "svc", account: "text")
        XCTAssertEqual(try identity.lookupSecret(service: "svc", account: "text"), Array("tökén ✓".utf8))
        XCTAssertEqual(try identity.lookupSecretString(service: "svc", account: "text"), "tökén ✓")
        XCTAssertNil(try identity.lookupSecretString(service: "svc", account: "none"))
        try identity.storeSecret([0xff, 0xfe], service: "svc", account: "binary")
        XCTAssertThrowsError(try identity.lookupSecretString(service: "svc", account: "binary")) { error in
            XCTAssertEqual((error as? DeviceIDError)?.code, .corrupt)
        }
    }
}
