@testable import DeviceID
import Foundation
import XCTest

/// Change the machine ID the library sees (DEVICEID_MACHINE_ID_PATH) and watch the flag.
final class CloneDetectionTests: XCTestCase {
    override func tearDown() {
        unsetenv("DEVICEID_MACHINE_ID_PATH")
    }

    private func machine(_ tmp: TemporaryDirectory, _ name: String, _ hex: String) -> String {
        let path = tmp.sub(name)
        FileManager.default.createFile(atPath: path, contents: Data((hex + "\n").utf8))
        return path
    }

    func testACopiedStoreOnAnotherMachineIsFlagged() throws {
        let tmp = TemporaryDirectory()
        let original = machine(tmp, "a", "11111111111111111111111111111111")
        let clone = machine(tmp, "b", "22222222222222222222222222222222")
        let store = tmp.sub("store")
        func fresh() -> DeviceIdentity { makeIdentity(store: store) }

        setenv("DEVICEID_MACHINE_ID_PATH", original, 1)
        let minted = try fresh().stableID(for: "app")
        XCTAssertFalse(minted.deviceChanged)
        XCTAssertFalse(minted.isWeak)
        XCTAssertFalse(try fresh().stableID(for: "app").deviceChanged)

        setenv("DEVICEID_MACHINE_ID_PATH", clone, 1)
        let onClone = try fresh().stableID(for: "app")
        XCTAssertEqual(onClone.id, minted.id, "the ID still comes back")
        XCTAssertTrue(onClone.deviceChanged)

        // The caller chooses to re-mint: a new ID, bound to this machine.
        try fresh().reset(appID: "app")
        let reminted = try fresh().stableID(for: "app")
        XCTAssertNotEqual(reminted.id, minted.id)
        XCTAssertFalse(reminted.deviceChanged)

        // The record holds a fingerprint, never the machine ID itself.
        let bytes = try XCTUnwrap(FileStore(path: store).read(.identifier(scope: "app", name: "app")))
        let text = String(decoding: bytes, as: UTF8.self)
        XCTAssertTrue(text.contains("machine="))
        XCTAssertFalse(text.contains("2222222222222222"))
    }

    func testNoMachineIDMakesStoredIDsWeak() throws {
        let tmp = TemporaryDirectory()
        setenv("DEVICEID_MACHINE_ID_PATH", tmp.sub("missing"), 1)
        let answer = try makeIdentity(store: tmp.sub("s"))
            .stableID(for: "app")
        XCTAssertTrue(answer.isWeak)
        XCTAssertFalse(answer.deviceChanged)
    }
}
