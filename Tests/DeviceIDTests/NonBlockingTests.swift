@testable import DeviceID
import Foundation
import XCTest

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
        XCTAssertEqual(try identity.stableID(for: "com.example.async").id, first.id)
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
        XCTAssertEqual(try identity.stableID(for: "com.example.async").location, blocking.storeLocation)
        do {
            _ = try await identity.nonblocking.stableID(for: "")
            XCTFail("an empty app id is refused")
        } catch {
            XCTAssertEqual(error.code, .invalidArgument)
        }
    }
}
