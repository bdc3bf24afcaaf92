import XCTest
@testable import DeviceID

/// What a NameOwnerChanged (name, old owner, new owner) means to a wait for a service's signal:
/// the service left (the signal will never come), or it was started by the request itself.
final class OwnerChangeTests: XCTestCase {
    private let portal = "org.freedesktop.portal.Desktop"

    func testAServiceStartedByActivationHasNotLeft() {
        // RetrieveSecret may start xdg-desktop-portal: the bus then says ("", ":1.9").
        XCTAssertFalse(SecretService.ownerLeft(DBusValue.strings([portal, "", ":1.9"]), portal))
    }

    func testAnOwnerThatExitsOrIsReplacedHasLeft() {
        XCTAssertTrue(SecretService.ownerLeft(DBusValue.strings([portal, ":1.4", ""]), portal))
        XCTAssertTrue(SecretService.ownerLeft(DBusValue.strings([portal, ":1.4", ":1.9"]), portal))
    }

    func testAnotherNamesChangeOrAMalformedOneIsNotOurs() {
        XCTAssertFalse(SecretService.ownerLeft(DBusValue.strings(["org.example.Other", ":1.4", ""]), portal))
        XCTAssertFalse(SecretService.ownerLeft(DBusValue.strings([portal]), portal))
        XCTAssertFalse(SecretService.ownerLeft([.string(portal), .boolean(true), .string("")], portal))
    }
}
