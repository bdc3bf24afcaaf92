@testable import DeviceID
import XCTest

/// AES-256-GCM as `Sealing` uses it, against the GCM specification's own vectors, and what a
/// sealed value refuses: another key, another item, a flipped bit, a truncation.
final class SealingTests: XCTestCase {
    private func bytes(_ hex: String) -> [UInt8] { Hex.decode(Array(hex.utf8)[...])! }

    /// McGrew and Viega, "The Galois/Counter Mode of Operation (GCM)", Test Case 16 (AES-256,
    /// 96-bit IV, 60 bytes of plaintext, 20 bytes of additional data) — the same vector as NIST's
    /// gcmEncryptExtIV256 set.
    func testGCMSpecificationTestCase16() throws {
        let key = bytes("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")
        let nonce = bytes("cafebabefacedbaddecaf888")
        let plaintext = bytes("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
                              + "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39")
        let additional = bytes("feedfacedeadbeeffeedfacedeadbeefabaddad2")
        let ciphertext = bytes("522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
                               + "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662")
        let tag = bytes("76fc6ece0f4e1768cddf8853bb2d551b")
        let sealed = try Sealing.seal(plaintext, key: key, context: additional, nonce: nonce)
        XCTAssertEqual(sealed, Sealing.magic + nonce + ciphertext + tag)
        XCTAssertEqual(try Sealing.open(sealed, key: key, context: additional), plaintext)
    }

    /// Test Case 13: AES-256, empty plaintext and no additional data — only a tag.
    func testGCMSpecificationTestCase13EmptyPlaintext() throws {
        let sealed = try Sealing.seal([], key: [UInt8](repeating: 0, count: 32), context: [],
                                      nonce: [UInt8](repeating: 0, count: 12))
        XCTAssertEqual(Array(sealed.suffix(16)), bytes("530f8afbc74536b9a963b4f1c4cb738b"))
        XCTAssertEqual(sealed.count, Sealing.overhead)
    }

    func testASealedValueOpensOnlyWithItsKeyAndItem() throws {
        let key = [UInt8](repeating: 7, count: 32)
        let secret = Array("a secret".utf8)
        let sealed = try Sealing.seal(secret, key: key, context: Array("service\0account".utf8))
        XCTAssertTrue(Sealing.isSealed(sealed))
        XCTAssertEqual(try Sealing.open(sealed, key: key, context: Array("service\0account".utf8)), secret)
        XCTAssertNotEqual(try Sealing.seal(secret, key: key, context: []), try Sealing.seal(secret, key: key, context: []),
                          "a fresh nonce each time")
        let refusals: [(String, () throws -> [UInt8])] = [
            ("another key", { try Sealing.open(sealed, key: [UInt8](repeating: 8, count: 32), context: Array("service\0account".utf8)) }),
            ("another item", { try Sealing.open(sealed, key: key, context: Array("service\0other".utf8)) }),
            ("a flipped bit", {
                var altered = sealed
                altered[Sealing.magic.count + Sealing.nonceSize] ^= 1
                return try Sealing.open(altered, key: key, context: Array("service\0account".utf8))
            }),
            ("a truncation", { try Sealing.open(Array(sealed.dropLast()), key: key, context: Array("service\0account".utf8)) }),
        ]
        for (what, attempt) in refusals {
            XCTAssertThrowsError(try attempt(), what) { error in
                XCTAssertEqual((error as? DeviceIDError)?.code, .corrupt, what)
            }
        }
    }
}
