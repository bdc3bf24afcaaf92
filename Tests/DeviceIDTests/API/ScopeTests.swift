@testable import DeviceID
import XCTest

/// identifierForVendor, advertisingIdentifier and OpenUDID with the file store.
final class ScopeTests: XCTestCase {
    private var tmp: TemporaryDirectory!

    override func setUp() { tmp = TemporaryDirectory() }

    private func fresh() -> DeviceIdentity {
        makeIdentity(store: tmp.path)
    }

    func testVendorIDsAreSharedWithinAVendorAndUnrelatedAcross() throws {
        let acme = try fresh().vendorID(for: "com.acme")
        XCTAssertEqual(try fresh().vendorID(for: "com.acme").id, acme.id)
        let other = try fresh().vendorID(for: "org.other")
        XCTAssertNotEqual(other.id, acme.id)
        XCTAssertNotEqual(try fresh().stableID(for: "com.acme").id, acme.id, "not the app ID of the same name")
        // Minted, not derived from anything on the machine: another (empty) store on the same
        // machine — the vendor's apps all removed and reinstalled — gets a different one.
        let elsewhere = TemporaryDirectory()
        let reinstalled = makeIdentity(store: elsewhere.path)
        XCTAssertNotEqual(try reinstalled.vendorID(for: "com.acme").id, acme.id)
        try fresh().resetVendorID(for: "com.acme")
        XCTAssertNotEqual(try fresh().vendorID(for: "com.acme").id, acme.id)
        XCTAssertEqual(try fresh().vendorID(for: "org.other").id, other.id, "another vendor's ID is untouched")
    }

    func testAdvertisingResetAndLimitTracking() throws {
        let first = try fresh().advertisingID()
        XCTAssertFalse(first.id.isNull)
        XCTAssertEqual(try fresh().advertisingID().id, first.id)

        try fresh().setAdvertisingTrackingLimited(true)
        XCTAssertTrue(try fresh().isAdvertisingTrackingLimited())
        let limited = try fresh().advertisingID()
        XCTAssertEqual(limited.uuidString, "00000000-0000-0000-0000-000000000000")
        XCTAssertTrue(limited.flags.contains(.limited))
        try fresh().setAdvertisingTrackingLimited(false)
        XCTAssertEqual(try fresh().advertisingID().id, first.id, "the real ID was kept")

        try fresh().resetAdvertisingID()
        let second = try fresh().advertisingID()
        XCTAssertNotEqual(second.id, first.id)
        try fresh().setAdvertisingTrackingLimited(true)
        try fresh().resetAdvertisingID()
        XCTAssertTrue(try fresh().advertisingID().id.isNull, "a reset while limited stays hidden")
        try fresh().setAdvertisingTrackingLimited(false)
        let third = try fresh().advertisingID()
        XCTAssertNotEqual(third.id, second.id)
        XCTAssertFalse(third.id.isNull)
    }

    func testOpenUDIDIsSharedWithPerAppOptOut() throws {
        let a = try fresh().openUDID(for: "com.a")
        XCTAssertEqual(try fresh().openUDID(for: "com.b").id, a.id)
        try fresh().setOpenUDIDOptOut(true, for: "com.b")
        XCTAssertThrowsError(try fresh().openUDID(for: "com.b")) {
            XCTAssertEqual(($0 as? DeviceIDError)?.code, .optedOut)
        }
        XCTAssertEqual(try fresh().openUDID(for: "com.a").id, a.id, "opting one app out leaves the others")
        try fresh().setOpenUDIDOptOut(false, for: "com.b")
        XCTAssertEqual(try fresh().openUDID(for: "com.b").id, a.id)
        try fresh().resetOpenUDID()
        XCTAssertNotEqual(try fresh().openUDID(for: "com.a").id, a.id)
    }

    func testCorruptSettingIsAnErrorNotOff() throws {
        try fresh().setAdvertisingTrackingLimited(true)
        try FileStore(path: tmp.path).write(.identifier(scope: "setting", name: "advertising.limit-tracking"), Array("maybe".utf8))
        XCTAssertThrowsError(try fresh().advertisingID()) {
            XCTAssertEqual(($0 as? DeviceIDError)?.code, .corrupt)
        }
    }
}
