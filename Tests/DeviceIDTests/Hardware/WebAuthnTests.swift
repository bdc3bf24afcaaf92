@testable import DeviceID
import XCTest

/// WebAuthn's structures that need no TPM: base64url, CBOR, the COSE key, authenticator data,
/// the DER signature and the public-area reader (the TPM side, judged by python-fido2 and
/// py_webauthn, is Tests/tpm/test_webauthn.py).
final class WebAuthnTests: XCTestCase {
    /// RFC 4648 §10's vectors without their padding, and the two letters §5 changes.
    func testBase64URLVectors() {
        let vectors = [("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"),
                       ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy")]
        for (plain, encoded) in vectors {
            XCTAssertEqual(Base64.encodeURL(Array(plain.utf8)), encoded)
            XCTAssertEqual(Base64.decodeURL(encoded), Array(plain.utf8), encoded)
        }
        XCTAssertEqual(Base64.encodeURL([0xfb, 0xff]), "-_8")
        XCTAssertEqual(Base64.decodeURL("-_8"), [0xfb, 0xff])
        for text in ["Zg==", "Zg=", "+_8", "-/8", "Z", "Zh", "Zm9v\n", " Zm9v"] {
            XCTAssertNil(Base64.decodeURL(text), text)
        }
    }

    private func hex(_ text: String) -> [UInt8] {
        Hex.decode(Array(text.replacingOccurrences(of: " ", with: "").utf8))!
    }

    /// RFC 8949 Appendix A, "Examples of Encoded CBOR Data Items".
    func testCBORAppendixAVectors() {
        let vectors: [(CBOR, String)] = [
            (.int(0), "00"), (.int(23), "17"), (.int(24), "1818"), (.int(100), "1864"), (.int(1000), "1903e8"),
            (.int(1_000_000), "1a000f4240"), (.int(1_000_000_000_000), "1b000000e8d4a51000"),
            (.unsigned(18_446_744_073_709_551_615), "1bffffffffffffffff"),
            (.int(-1), "20"), (.int(-10), "29"), (.int(-100), "3863"), (.int(-1000), "3903e7"),
            (.int(Int64.min), "3b7fffffffffffffff"),
            (.bytes([]), "40"), (.bytes([1, 2, 3, 4]), "4401020304"),
            (.text(""), "60"), (.text("a"), "6161"), (.text("IETF"), "6449455446"), (.text("\u{fc}"), "62c3bc"),
            (.array([]), "80"), (.array([.int(1), .int(2), .int(3)]), "83010203"),
            (.map([]), "a0"),
            (.map([CBOR.Entry(key: .int(1), value: .int(2)), CBOR.Entry(key: .int(3), value: .int(4))]), "a201020304"),
            (.map([CBOR.Entry(key: .text("a"), value: .int(1)),
                   CBOR.Entry(key: .text("b"), value: .array([.int(2), .int(3)]))]), "a26161016162820203"),
        ]
        for (item, encoded) in vectors {
            XCTAssertEqual(Hex.encode(item.encoded), encoded, "\(item)")
        }
    }

    /// RFC 8949 §4.2.3's length-first order of the keys 10, 100, -1, "z", "aa" (CTAP2's canonical
    /// CBOR), whatever order they are given in.
    func testCBORMapKeysAreInLengthFirstOrder() {
        let keys: [CBOR] = [.text("aa"), .int(100), .text("z"), .int(-1), .int(10)]
        let map = CBOR.map(keys.map { CBOR.Entry(key: $0, value: .int(0)) })
        XCTAssertEqual(Hex.encode(map.encoded), "a5" + "0a00" + "2000" + "186400" + "617a00" + "62616100")
    }

    /// The layout of WebAuthn §6.5.1.1's example EC2 key: kty 2, alg -7, crv 1, x, y, in that order.
    func testTheCOSEKeyIsWebAuthnsEC2Layout() {
        let x = hex("65eda5a12577c2bae829437fe338701a10aaa375e1bb5b5de108de439c08551d")
        let y = hex("1e52ed75701163f7f9e40ddf9f341b3dc9ba860af7e0ca7ca7e9eecd0084d19c")
        XCTAssertEqual(WebAuthnTPM.coseKey(x: x, y: y).encoded,
                       hex("a5 0102 0326 2001 215820") + x + hex("225820") + y)
    }

    /// A marshalled TPMT_PUBLIC of the credential key's shape (scheme NULL), and of the app key's.
    private func publicArea(scheme: [UInt8], x: [UInt8], y: [UInt8]) -> [UInt8] {
        hex("0023 000b 00040472 0000 0010") + scheme + hex("0003 0010")
            + [0, UInt8(x.count)] + x + [0, UInt8(y.count)] + y
    }

    func testThePointIsReadFromBothKeyShapesAndPadded() throws {
        let x = [UInt8](repeating: 0xaa, count: 32), shortY = [UInt8](repeating: 0xbb, count: 31)
        let credential = try XCTUnwrap(WebAuthnTPM.point(ofPublicArea: publicArea(scheme: hex("0010"), x: x, y: shortY)))
        XCTAssertEqual(credential.x, x)
        XCTAssertEqual(credential.y, [0] + shortY, "a point coordinate is 32 bytes in COSE")
        XCTAssertNotNil(WebAuthnTPM.point(ofPublicArea: publicArea(scheme: hex("0018 000b"), x: x, y: x)))
        let good = publicArea(scheme: hex("0010"), x: x, y: x)
        for bad in [Array(good.dropLast()), good + [0], [0x00, 0x01] + good.dropFirst(2),
                    publicArea(scheme: hex("0010"), x: x + x, y: x), []] {
            XCTAssertNil(WebAuthnTPM.point(ofPublicArea: bad))
        }
    }

    func testAuthenticatorDataIsRPHashFlagsCounterThenTheCredential() {
        let key = CBOR.bytes([7])
        let data = WebAuthnTPM.authenticatorData(appID: "com.example.a", flags: 0x40, counter: 0x0102_0304,
                                                 credential: (id: [9, 9], key: key))
        XCTAssertEqual(Array(data[0..<32]), SHA256.hash(Array("com.example.a".utf8)))
        XCTAssertEqual(Array(data[32..<37]), [0x40, 1, 2, 3, 4])
        XCTAssertEqual(Array(data[37..<53]), WebAuthnTPM.aaguid)
        XCTAssertEqual(Array(data[53...]), [0, 2, 9, 9, 0x41, 7])
        XCTAssertEqual(WebAuthnTPM.authenticatorData(appID: "a", flags: 0, counter: 1, credential: nil).count, 37)
        XCTAssertEqual(Hex.encode(WebAuthnTPM.aaguid), "d6dbaaebf39d47a1b8deee391e4be274")
    }

    /// DER INTEGERs are minimal and positive: leading zeros dropped, a zero added before a high bit.
    func testTheTPMSignatureBecomesDER() throws {
        let r = [UInt8](repeating: 0x80, count: 32), s = [0, 0, 0x12] + [UInt8](repeating: 0x34, count: 29)
        let tpmt = hex("0018 000b") + [0, 32] + r + [0, 32] + s
        let der = try XCTUnwrap(WebAuthnTPM.derSignature(ofTPMSignature: tpmt))
        XCTAssertEqual(der, [0x30, 2 + 33 + 2 + 30, 0x02, 33, 0] + r + [0x02, 30, 0x12] + Array(repeating: 0x34, count: 29))
        XCTAssertEqual(WebAuthnTPM.derSignature(ofTPMSignature: hex("0018 000b 0001 00 0001 00")),
                       hex("3006 020100 020100"))
        let long = hex("0018 000b") + [0, 33] + [1] + r + [0, 32] + s
        for bad in [hex("0014 000b") + tpmt.dropFirst(4), hex("0018 000c") + tpmt.dropFirst(4), Array(tpmt.dropLast()),
                    tpmt + [0], hex("0018 000b 0000 0000"), long] {
            XCTAssertNil(WebAuthnTPM.derSignature(ofTPMSignature: bad))
        }
    }

    func testTheAttestationObjectIsCanonicalCBOR() {
        let object = WebAuthnTPM.attestationObject(authenticatorData: [1], certificates: [[2], [3]], signature: [4],
                                                   certInfo: [5], publicArea: [6])
        XCTAssertEqual(Hex.encode(object), Hex.encode(
            hex("a3 63") + Array("fmt".utf8) + hex("63") + Array("tpm".utf8)
                + hex("67") + Array("attStmt".utf8) + hex("a6")
                + hex("63") + Array("alg".utf8) + hex("26")
                + hex("63") + Array("sig".utf8) + hex("4104")
                + hex("63") + Array("ver".utf8) + hex("63") + Array("2.0".utf8)
                + hex("63") + Array("x5c".utf8) + hex("82 4102 4103")
                + hex("67") + Array("pubArea".utf8) + hex("4106")
                + hex("68") + Array("certInfo".utf8) + hex("4105")
                + hex("68") + Array("authData".utf8) + hex("4101")))
    }
}
