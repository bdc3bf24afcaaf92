@testable import DeviceID
import XCTest

/// The pieces of the hardware-bound ID and its wire format that need no TPM: base64, the flat
/// JSON messages, the TCTI string, and the derivations (the TPM side is Tests/tpm).
final class HardwareWireTests: XCTestCase {
    /// RFC 4648, section 10 "Test Vectors".
    func testBase64RFC4648Vectors() {
        let vectors = [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="),
                       ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")]
        for (plain, encoded) in vectors {
            XCTAssertEqual(Base64.encode(Array(plain.utf8)), encoded)
            XCTAssertEqual(Base64.decode(encoded), Array(plain.utf8), encoded)
        }
        let all = (0...255).map { UInt8($0) }
        XCTAssertEqual(Base64.decode(Base64.encode(all)), all)
    }

    func testBase64RefusesWhatIsNotCanonical() {
        for text in ["Zg=", "Zg", "Zh==", "Zm9=", "Zm9v\n", "Zm-v", "Zm_v", "=Zm9", "Zg==Zg==", "Z===", " Zm9v"] {
            XCTAssertNil(Base64.decode(text), text)
        }
    }

    func testFlatJSONWritesEscapedAndReadsBack() throws {
        var json = FlatJSON()
        json.set("v", 1)
        json.set("app_id", "a\"b\\c\u{1}d\u{e9}")
        XCTAssertEqual(json.text, #"{"v":1,"app_id":"a\"b\\c\u0001d"# + "\u{e9}" + #""}"#)
        let back = try XCTUnwrap(FlatJSON(parsing: json.text))
        XCTAssertEqual(back.integer("v"), 1)
        XCTAssertEqual(back.string("app_id"), "a\"b\\c\u{1}d\u{e9}")
        let spaced = try XCTUnwrap(FlatJSON(parsing: " {\n \"a\" : \"x\\u00e9\\n\" , \"n\": -42 }\n"))
        XCTAssertEqual(spaced.string("a"), "x\u{e9}\n")
        XCTAssertEqual(spaced.integer("n"), -42)
        XCTAssertEqual(FlatJSON(parsing: "{}")?.fields.count, 0)
    }

    func testFlatJSONRefusesOtherShapes() {
        for text in ["", "[]", "{", "{\"a\":1", "{\"a\":{}}", "{\"a\":[1]}", "{\"a\":true}", "{\"a\":1.5}",
                     "{\"a\":1,\"a\":2}", "{\"a\":1} x", "{a:1}", "{\"a\":\"\u{1}\"}", "{\"a\":\"\\x\"}",
                     "{\"a\":99999999999999999999}", "{\"a\":1,}"] {
            XCTAssertNil(FlatJSON(parsing: text), text)
        }
    }

    /// EK certificates as TPMs store them: bare, padded to the NV index's size, after the TCG PC
    /// Client header; anything that is not DER (empty, cut short, another structure) is refused on
    /// the device, with words naming the index, never passed on (issue 53, case 5).
    func testEKCertificateIsTrimmedToItsDER() throws {
        let at = TPMAddress.kernelResourceManager, index: UInt32 = 0x01c0_0002
        func der(_ stored: [UInt8]) throws -> [UInt8] { try TPMAttestation.derCertificate(stored, index: index, address: at) }
        let certificate: [UInt8] = [0x30, 0x82, 0x01, 0x00] + [UInt8](repeating: 7, count: 256)
        XCTAssertEqual(try der(certificate), certificate)
        XCTAssertEqual(try der(certificate + [0, 0, 0xff, 0xff]), certificate)
        XCTAssertEqual(try der([0x10, 0x01, 0x00, 0x01, 0x04] + certificate + [0]), certificate)
        XCTAssertEqual(try der([0x30, 0x03, 1, 2, 3, 0]), [0x30, 0x03, 1, 2, 3])
        for stored: [UInt8] in [[0x30, 0x82, 0x01], [0x04, 0x01, 0x00], [], [UInt8](repeating: 0, count: 613)] {
            XCTAssertThrowsError(try der(stored)) { error in
                XCTAssertEqual((error as? DeviceIDError)?.code, .io)
                XCTAssertTrue("\(error)".contains("0x01c00002"), "\(error)")
            }
        }
    }

    /// An EK chain index: DER certificates one after another, then padding, which is dropped,
    /// as is a certificate cut short; nothing that is not DER is taken for one.
    func testEKChainIndexIsSplitIntoItsCertificates() {
        let first: [UInt8] = [0x30, 0x81, 0x80] + [UInt8](repeating: 1, count: 128)
        let second: [UInt8] = [0x30, 0x03, 2, 2, 2]
        XCTAssertEqual(TPMAttestation.derCertificates(first + second + [0xff, 0xff, 0xff]), first + second)
        XCTAssertEqual(TPMAttestation.derCertificates(first + [0, 0] + second), first)
        XCTAssertEqual(TPMAttestation.derCertificates(second + [0x30, 0x82, 0x01]), second)
        XCTAssertEqual(TPMAttestation.derCertificates([0xff] + first), [])
        XCTAssertEqual(TPMAttestation.derCertificates([]), [])
    }

    func testTCTIStrings() throws {
        XCTAssertEqual(try TPMAddress(parsing: "device").description, "device:/dev/tpmrm0")
        XCTAssertEqual(try TPMAddress(parsing: "device:/dev/tpmrm1").description, "device:/dev/tpmrm1")
        XCTAssertEqual(try TPMAddress(parsing: "swtpm:path=/run/t/tpm.sock").configuration, "path=/run/t/tpm.sock")
        for (text, code) in [("device:/dev/tpm0", DeviceIDError.Code.invalidArgument),
                             ("device:tpmrm0", .invalidArgument), ("mssim:host=localhost", .unsupported),
                             ("tabrmd", .unsupported), ("swtpm", .unsupported), ("swtpm:host=localhost,port=2321", .unsupported),
                             ("swtpm:path=relative.sock", .unsupported)] {
            XCTAssertThrowsError(try TPMAddress(parsing: text), text) { XCTAssertEqual(($0 as? DeviceIDError)?.code, code) }
        }
    }

    /// The template's unique and the ID, recomputed with libcrypto's SHA-256 (an implementation
    /// other than sha256.c's) from the definitions in docs/HARDWARE-ID.md.
    func testDerivationsFollowTheDesign() throws {
        func be32(_ n: Int) -> [UInt8] { [UInt8(n >> 24 & 0xff), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)] }
        let label = Array("deviceid.hardware-id.v1".utf8), app = Array("com.example.é".utf8)
        let expected = try Digests.hex(.sha256, be32(label.count) + label + be32(app.count) + app)
        XCTAssertEqual(Hex.encode(HardwareIdentity.unique(appID: "com.example.é")), expected)
        XCTAssertNotEqual(HardwareIdentity.unique(appID: "a"), HardwareIdentity.unique(appID: "b"))
        let ak = Array("deviceid.attestation-key.v1".utf8)
        XCTAssertEqual(Hex.encode(HardwareIdentity.attestationKeyUnique(appID: "com.example.é")),
                       try Digests.hex(.sha256, be32(ak.count) + ak + be32(app.count) + app))
        XCTAssertNotEqual(HardwareIdentity.attestationKeyUnique(appID: "a"), HardwareIdentity.attestationKeyUnique(appID: "b"))

        let name: [UInt8] = [0x00, 0x0b] + (0..<32).map { UInt8($0) }
        let digest = try Digests.hex(.sha256, Array("deviceid.hardware-id.v1/name".utf8) + name)
        let id = HardwareIdentity.id(fromName: name).array
        var bytes = Hex.decode(Array(digest.utf8))!
        XCTAssertEqual(Array(id[0..<6]), Array(bytes[0..<6]))
        XCTAssertEqual(id[6] >> 4, 8, "version 8")
        XCTAssertEqual(id[6] & 0x0f, bytes[6] & 0x0f)
        XCTAssertEqual(id[8] >> 6, 2, "RFC 9562 variant")
        bytes[6] = id[6]
        bytes[8] = id[8]
        XCTAssertEqual(id, Array(bytes[0..<16]))
    }
}
