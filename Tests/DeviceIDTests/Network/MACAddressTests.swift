@testable import DeviceID
import Foundation
import XCTest

final class MACAddressTests: XCTestCase {
    func testFormats() throws {
        let mac = try XCTUnwrap(MACAddress(parsing: "00:16:3e:12:34:5a"))
        XCTAssertEqual(mac.text(compact: false), "00:16:3E:12:34:5A")
        XCTAssertEqual(mac.text(compact: true), "00163E12345A")
        XCTAssertEqual(MACAddress(parsing: "00163E12345A")?.bytes, mac.bytes)
        XCTAssertNil(MACAddress(parsing: "00:16:3e:12:34"))
        XCTAssertNil(MACAddress(parsing: "00:16:3e:12:34:5g"))
        XCTAssertNil(MACAddress(parsing: "00.16.3e.12.34.5a"))
        XCTAssertFalse(mac.isWeak)
        XCTAssertTrue(try XCTUnwrap(MACAddress(parsing: "02:fc:00:00:00:01")).isWeak)
    }

    func testUnusableAddresses() {
        for text in ["00:00:00:00:00:00", "ff:ff:ff:ff:ff:ff", "01:00:5e:00:00:01", "33:33:00:00:00:01", "02:00:00:00:00:00"] {
            XCTAssertFalse(MACAddress.isUsable(MACAddress(parsing: text)!.bytes), text)
        }
        XCTAssertTrue(MACAddress.isUsable(MACAddress(parsing: "02:00:00:00:00:01")!.bytes))
    }

    /// The same choice whatever order the interfaces were created (and listed) in.
    func testChoiceIsIndependentOfOrder() throws {
        let interfaces: [FakeSysfs.Interface] = [
            .init(name: "enp3s0", address: "00:16:3e:00:00:03"),
            .init(name: "enp1s0", address: "00:16:3e:00:00:01"),
            .init(name: "wlp2s0", address: "a2:00:00:00:00:02"),       // locally administered
            .init(name: "enp0s1", address: "00:16:3e:00:00:00", assignType: "3"),  // set, not permanent
            .init(name: "lo", address: "00:00:00:00:00:00", type: "772"),
            .init(name: "br0", address: "00:16:3e:aa:aa:aa", extra: ["bridge"]),
            .init(name: "tap0", address: "00:16:3e:bb:bb:bb", extra: ["tun_flags"]),
            .init(name: "veth0", address: "00:16:3e:cc:cc:cc", hasDevice: false),
            .init(name: "docker0", address: "00:16:3e:dd:dd:dd", hasDevice: false),
            .init(name: "ib0", address: "00:16:3e:ee:ee:ee", type: "32"),
        ]
        for order in [interfaces, interfaces.reversed(), interfaces.shuffled(), interfaces.shuffled()] {
            let sysfs = FakeSysfs()
            for interface in order { try sysfs.add(interface) }
            let chosen = try NetworkInterfaces.primaryAddress(sysfsRoot: sysfs.root)
            XCTAssertEqual(chosen.interface, "enp1s0")
            XCTAssertEqual(chosen.text(compact: false), "00:16:3E:00:00:01")
            XCTAssertTrue(chosen.isPermanent)
            XCTAssertFalse(chosen.isWeak)
        }
    }

    func testWeakAddressIsUsedOnlyWhenNothingBetterExistsAndIsFlagged() throws {
        let sysfs = FakeSysfs()
        try sysfs.add(.init(name: "eth1", address: "06:00:00:00:00:09"))
        try sysfs.add(.init(name: "eth0", address: "02:00:00:00:00:00"))   // iOS 7's constant: never
        try sysfs.add(.init(name: "eth2", address: "00:00:00:00:00:00"))
        let chosen = try NetworkInterfaces.primaryAddress(sysfsRoot: sysfs.root)
        XCTAssertEqual(chosen.interface, "eth1")
        XCTAssertTrue(chosen.isWeak)
        XCTAssertThrowsError(try NetworkInterfaces.primaryAddress(interface: "eth0", sysfsRoot: sysfs.root)) {
            XCTAssertEqual(($0 as? DeviceIDError)?.code, .notFound)
        }
    }

    func testNamedInterfaceAndBadNames() throws {
        let sysfs = FakeSysfs()
        try sysfs.add(.init(name: "veth7", address: "00:16:3e:cc:cc:cc", hasDevice: false))
        XCTAssertEqual(try NetworkInterfaces.primaryAddress(interface: "veth7", sysfsRoot: sysfs.root).interface, "veth7",
                       "an interface asked for by name needs no device")
        XCTAssertThrowsError(try NetworkInterfaces.primaryAddress(sysfsRoot: sysfs.root)) {
            XCTAssertEqual(($0 as? DeviceIDError)?.code, .notFound)
        }
        for bad in ["", "../../etc", "a/b", ".", "..", "sixteen-chars-xx", "sp ace"] {
            XCTAssertThrowsError(try NetworkInterfaces.primaryAddress(interface: bad, sysfsRoot: sysfs.root), bad) {
                XCTAssertEqual(($0 as? DeviceIDError)?.code, .invalidArgument, bad)
            }
        }
        XCTAssertThrowsError(try NetworkInterfaces.primaryAddress(interface: "nope", sysfsRoot: sysfs.root)) {
            XCTAssertEqual(($0 as? DeviceIDError)?.code, .notFound)
        }
    }

    /// MD5(MAC) and MD5(MAC + bundle id) against md5sum over the documented input.
    func testMACDigestsMatchMd5sum() throws {
        let mac = try XCTUnwrap(MACAddress(parsing: "00:16:3e:12:34:56"))
        for (bundle, input) in [(nil, "00163E123456"), ("com.example.app", "00163E123456com.example.app")] {
            let expected = String(String(decoding: try runProgram("md5sum", [], stdin: Data(input.utf8)).output, as: UTF8.self).prefix(32))
            XCTAssertEqual(try Digests.macMD5(mac, bundleID: bundle), expected)
        }
        let token = Data([0xde, 0xad, 0xbe, 0xef])
        let expected = String(String(decoding: try runProgram("sha256sum", [], stdin: token + Data("com.x".utf8)).output, as: UTF8.self).prefix(64))
        XCTAssertEqual(try Digests.tokenHash(Array(token), bundleID: "com.x", .sha256), expected)
    }
}
