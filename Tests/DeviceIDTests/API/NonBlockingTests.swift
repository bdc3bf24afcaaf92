@testable import DeviceID
import Foundation
import XCTest

/// A blocking call from async code, in a synchronous closure (as a caller mixing both writes it).
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
        XCTAssertEqual(vendor, try synchronously { () throws(DeviceIDError) in try identity.vendorID(for: "com.example") }.id)
        try await identity.nonblocking.storeSecret(Array("s".utf8), service: "svc", account: "acc")
        let secret = try await identity.nonblocking.lookupSecret(service: "svc", account: "acc")
        XCTAssertEqual(secret, Array("s".utf8))
        let deleted = try await identity.nonblocking.deleteSecret(service: "svc", account: "acc")
        XCTAssertTrue(deleted)
        try await identity.nonblocking.reset(appID: "com.example.async")
        let minted = try await identity.nonblocking.stableID(for: "com.example.async").id
        XCTAssertNotEqual(minted, first.id)
        let environment = try await identity.nonblocking.environment()
        let blocking = try synchronously { () throws(DeviceIDError) in try identity.environment() }
        XCTAssertEqual(environment.storePath, tmp.path)
        XCTAssertEqual(environment.storeLocation, blocking.storeLocation)
        XCTAssertEqual(environment.stableIDLocation, blocking.storeLocation, "the file backend keeps IDs in the store")
        XCTAssertEqual(try synchronously { () throws(DeviceIDError) in try identity.stableID(for: "com.example.async") }
                           .location, blocking.storeLocation)
        do {
            _ = try await identity.nonblocking.stableID(for: "")
            XCTFail("an empty app id is refused")
        } catch let error as DeviceIDError {
            XCTAssertEqual(error.code, .invalidArgument)
        }
    }

    /// Every other waiting call has its async form, answering as the blocking one: settings,
    /// every scope's resets, string secrets; the TPM's calls fail as theirs do without a TPM.
    func testEveryWaitingCallHasItsAsyncForm() async throws {
        let tmp = TemporaryDirectory()
        let identity = makeIdentity(.file, store: tmp.path)
        let async = identity.nonblocking
        try await async.setAdvertisingTrackingLimited(true)
        let limited = try await async.isAdvertisingTrackingLimited()
        XCTAssertTrue(limited)
        let hidden = try await async.advertisingID()
        XCTAssertEqual(hidden.uuidString, "00000000-0000-0000-0000-000000000000")
        try await async.setAdvertisingTrackingLimited(false)
        let advertising = try await async.advertisingID()
        try await async.resetAdvertisingID()
        let newAdvertising = try await async.advertisingID()
        XCTAssertNotEqual(newAdvertising.id, advertising.id)
        try await async.setOpenUDIDOptOut(true, for: "com.example.out")
        let optedOut = try await async.isOpenUDIDOptedOut("com.example.out")
        XCTAssertTrue(optedOut)
        let shared = try await async.openUDID(for: "com.example.in")
        try await async.resetOpenUDID()
        let newShared = try await async.openUDID(for: "com.example.in")
        XCTAssertNotEqual(newShared.id, shared.id)
        let vendor = try await async.vendorID(for: "com.vendor")
        try await async.resetVendorID(for: "com.vendor")
        let newVendor = try await async.vendorID(for: "com.vendor")
        XCTAssertNotEqual(newVendor.id, vendor.id)
        try await async.storeSecret("pässword", service: "svc", account: "acc")
        let text = try await async.lookupSecretString(service: "svc", account: "acc")
        XCTAssertEqual(text, "pässword")
        let found = try await async.lookupSecretAndLocation(service: "svc", account: "acc")
        XCTAssertEqual(found?.value, Array("pässword".utf8))
        let diagnosis = try await async.diagnose()
        XCTAssertEqual(diagnosis.answeringStores, "file")
        setenv("DEVICEID_TPM_TCTI", "device:/nonexistent/tpmrm0", 1)
        defer { unsetenv("DEVICEID_TPM_TCTI") }
        do {
            _ = try await async.hardwareID(for: "com.example.hw")
            XCTFail("no TPM here")
        } catch let error as DeviceIDError {
            XCTAssertEqual(error.code, .unavailable)
        }
        let hash = [UInt8](repeating: 7, count: 32)
        do {
            _ = try await async.webAuthnAssertion(for: "com.example.hw", clientDataHash: hash)
            XCTFail("no TPM here")
        } catch let error as DeviceIDError {
            XCTAssertEqual(error.code, .unavailable)
        }
        do {
            _ = try await async.webAuthnAttestation(for: "com.example.hw", clientDataHash: hash, akCertificate: "{}")
            XCTFail("an AK certificate message of no wire format version")
        } catch let error as DeviceIDError {
            XCTAssertEqual(error.code, .unsupported, "\(error)")
        }
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
