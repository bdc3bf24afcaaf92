import CDeviceIDAPI
import XCTest
@testable import DeviceID

/// include/deviceid.h owns every number of the C ABI (Python's copies and the statuses are
/// generated with it, scripts/gen-abi); Swift's enums carry them as raw values, which the C
/// thunks pass on unchanged. Each must be the header's, and each of the header's values its case.
final class HeaderValuesTests: XCTestCase {
    func testStableIDFlagsAreTheHeaders() {
        let flags: [(StableID.Flags, UInt32)] = [
            (.deviceChanged, DEVICEID_FLAG_DEVICE_CHANGED), (.weak, DEVICEID_FLAG_WEAK),
            (.limited, DEVICEID_FLAG_LIMITED), (.fileOnly, DEVICEID_FLAG_FILE_ONLY),
            (.repaired, DEVICEID_FLAG_REPAIRED), (.mirrored, DEVICEID_FLAG_MIRRORED),
            (.provisional, DEVICEID_FLAG_PROVISIONAL), (.appDataOnly, DEVICEID_FLAG_APP_DATA_ONLY),
            (.anchorChanged, DEVICEID_FLAG_ANCHOR_CHANGED),
        ]
        for (flag, value) in flags { XCTAssertEqual(flag.rawValue, value) }
        XCTAssertEqual(Set(flags.map(\.1)).count, flags.count, "each flag its own bit")
    }

    func testSourcesScopesAndBackendsAreTheHeaders() {
        let sources: [(StableID.Source, Int32)] = [
            (.keyring, DEVICEID_SOURCE_KEYRING), (.file, DEVICEID_SOURCE_FILE),
            (.created, DEVICEID_SOURCE_CREATED), (.portal, DEVICEID_SOURCE_PORTAL),
        ]
        for (source, value) in sources { XCTAssertEqual(source.rawValue, value) }
        let scopes: [(Scope, Int32)] = [
            (.app, DEVICEID_SCOPE_APP), (.vendor, DEVICEID_SCOPE_VENDOR),
            (.advertising, DEVICEID_SCOPE_ADVERTISING), (.openUDID, DEVICEID_SCOPE_OPENUDID),
        ]
        XCTAssertEqual(scopes.count, Scope.allCases.count)
        for (scope, value) in scopes { XCTAssertEqual(scope.rawValue, value) }
        let backends: [(Configuration.Backend, Int32)] = [
            (.auto, DEVICEID_BACKEND_AUTO), (.secretService, DEVICEID_BACKEND_SECRET_SERVICE),
            (.file, DEVICEID_BACKEND_FILE),
        ]
        XCTAssertEqual(backends.count, Configuration.Backend.allCases.count)
        for (backend, value) in backends { XCTAssertEqual(backend.rawValue, value) }
    }

    func testTheEnvironmentsValuesAreTheHeaders() {
        let locations: [(StorageLocation, Int32)] = [
            (.keyring, DEVICEID_LOCATION_KEYRING), (.portal, DEVICEID_LOCATION_PORTAL),
            (.appData, DEVICEID_LOCATION_APP_DATA), (.host, DEVICEID_LOCATION_HOST),
            (.container, DEVICEID_LOCATION_CONTAINER), (.volume, DEVICEID_LOCATION_VOLUME),
            (.bindMount, DEVICEID_LOCATION_BIND_MOUNT),
            (.undetermined, DEVICEID_LOCATION_UNDETERMINED),
        ]
        XCTAssertEqual(locations.count, StorageLocation.allCases.count)
        for (location, value) in locations { XCTAssertEqual(location.rawValue, value) }
        let kinds: [(Surroundings.Kind, Int32)] = [
            (.host, DEVICEID_ENVIRONMENT_HOST), (.flatpak, DEVICEID_ENVIRONMENT_FLATPAK),
            (.snap, DEVICEID_ENVIRONMENT_SNAP), (.container, DEVICEID_ENVIRONMENT_CONTAINER),
        ]
        for (kind, value) in kinds { XCTAssertEqual(kind.rawValue, value) }
        let portals: [(EnvironmentReport.PortalState, Int32)] = [
            (.notAsked, DEVICEID_PORTAL_NOT_ASKED), (.secret, DEVICEID_PORTAL_SECRET),
            (.absent, DEVICEID_PORTAL_ABSENT), (.failed, DEVICEID_PORTAL_FAILED),
        ]
        for (portal, value) in portals { XCTAssertEqual(portal.rawValue, value) }
    }
}
