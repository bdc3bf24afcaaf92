@testable import DeviceID
import Foundation
import XCTest

/// The TPM pins' store without a TPM (docs/STATE.md, "TPM pins"): where a pin is filed, that it
/// reads back and is forgotten, that none is kept without a machine ID, and that a pin file which
/// holds no Name is an error, never "none". Tests/tpm/test_tpm_pin.py has the conversations.
final class TPMPinsTests: XCTestCase {
    private let saltName = [UInt8](repeating: 7, count: 34)

    override func tearDown() {
        for variable in ["DEVICEID_MACHINE_ID_PATH", "DEVICEID_STORE_DIR", "DEVICEID_TPM_TCTI"] { unsetenv(variable) }
    }

    private func machine(_ tmp: TemporaryDirectory, _ hex: String) {
        let path = tmp.sub("machine-id-" + hex)
        FileManager.default.createFile(atPath: path, contents: Data((hex + "\n").utf8))
        setenv("DEVICEID_MACHINE_ID_PATH", path, 1)
    }

    func testFiledPerMachineAndAddressUnderAHashNeverTheMachineID() throws {
        let tmp = TemporaryDirectory()
        setenv("DEVICEID_STORE_DIR", tmp.sub("store"), 1)
        let here = try TPMAddress(parsing: "swtpm:path=/run/a.sock"), there = try TPMAddress(parsing: "device")
        machine(tmp, "11111111111111111111111111111111")
        let key = try XCTUnwrap(TPMPins.place(for: here)).key
        XCTAssertEqual(try XCTUnwrap(TPMPins.place(for: here)).store.path, tmp.sub("store"))
        // HMAC-SHA256(machine ID, label ‖ 0 ‖ address), as the TPM test computes it with Python's hmac.
        let mac = SHA256.hmac(key: [UInt8](repeating: 0x11, count: 16),
                              message: Array("deviceid.tpm-pin.v1\0swtpm:path=/run/a.sock".utf8))
        XCTAssertEqual(key, .state("tpm-pin " + Hex.encode(mac)))
        XCTAssertFalse(key.account.contains("1111111111111111"))
        XCTAssertNotEqual(try XCTUnwrap(TPMPins.place(for: there)).key, key, "another address, another pin")
        machine(tmp, "22222222222222222222222222222222")
        XCTAssertNotEqual(try XCTUnwrap(TPMPins.place(for: here)).key, key, "another machine, another pin")
    }

    func testAPinKeptReadsBackAndIsForgotten() throws {
        let tmp = TemporaryDirectory()
        setenv("DEVICEID_STORE_DIR", tmp.sub("store"), 1)
        setenv("DEVICEID_TPM_TCTI", "swtpm:path=/run/a.sock", 1)
        machine(tmp, "11111111111111111111111111111111")
        let first = try TPMAddress.resolvedWithPin()
        XCTAssertNil(try XCTUnwrap(first.pin).name, "first use")
        first.pin?.keep(saltName)
        XCTAssertEqual(try TPMAddress.resolvedWithPin().pin?.name, saltName)
        XCTAssertEqual(try TPMPins.read(first), saltName)
        XCTAssertTrue(try TPMPins.forget(first))
        XCTAssertNil(try TPMPins.read(first))
        XCTAssertFalse(try TPMPins.forget(first))
    }

    func testNoMachineIDKeepsNoPin() throws {
        let tmp = TemporaryDirectory()
        setenv("DEVICEID_STORE_DIR", tmp.sub("store"), 1)
        setenv("DEVICEID_TPM_TCTI", "swtpm:path=/run/a.sock", 1)
        setenv("DEVICEID_MACHINE_ID_PATH", tmp.sub("missing"), 1)
        let address = try TPMAddress.resolvedWithPin()
        address.pin?.keep(saltName)
        XCTAssertNil(TPMPins.place(for: address))
        XCTAssertNil(try TPMPins.read(address))
        XCTAssertFalse(FileManager.default.fileExists(atPath: tmp.sub("store")), "nothing written")
    }

    func testAPinThatHoldsNoNameIsAnErrorNeverNone() throws {
        let tmp = TemporaryDirectory()
        setenv("DEVICEID_STORE_DIR", tmp.sub("store"), 1)
        setenv("DEVICEID_TPM_TCTI", "swtpm:path=/run/a.sock", 1)
        machine(tmp, "11111111111111111111111111111111")
        let address = try TPMAddress(parsing: "swtpm:path=/run/a.sock")
        let place = try XCTUnwrap(TPMPins.place(for: address))
        try place.store.write(place.key, [0, 11])
        XCTAssertThrowsError(try TPMPins.read(address)) {
            XCTAssertEqual(($0 as? DeviceIDError)?.code, .corrupt)
            XCTAssertTrue(($0 as? DeviceIDError)?.detail.contains("deviceid tpm-pin forget") == true)
        }
        XCTAssertThrowsError(try TPMAddress.resolvedWithPin())
        XCTAssertTrue(try TPMPins.forget(address), "the way out")
    }
}
