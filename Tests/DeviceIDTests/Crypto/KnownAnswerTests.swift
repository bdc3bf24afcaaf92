import CDeviceIDPrimitives
@testable import DeviceID
import XCTest

/// Digests and MACs, through libcrypto and DeviceID's own SHA-256 (sha256.c), against published
/// vectors and against each other.
final class KnownAnswerTests: XCTestCase {
    private func hex(_ bytes: [UInt8]) -> String { Hex.encode(bytes) }

    /// RFC 1321, appendix A.5 "Test suite".
    func testMD5RFC1321Suite() throws {
        let vectors: [(String, String)] = [
            ("", "d41d8cd98f00b204e9800998ecf8427e"),
            ("a", "0cc175b9c0f1b6a831c399e269772661"),
            ("abc", "900150983cd24fb0d6963f7d28e17f72"),
            ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            ("abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
            ("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"),
            (String(repeating: "1234567890", count: 8), "57edf4a22be3c955ac49da2e2107b67a"),
        ]
        for (input, expected) in vectors {
            XCTAssertEqual(hex(try LibCrypto.hash(.md5, Array(input.utf8))), expected, "MD5(\"\(input)\")")
        }
    }

    /// FIPS 180-2, appendix B (one-block and two-block messages), and the empty message.
    func testSHA256FIPS180Examples() throws {
        let vectors: [(String, String)] = [
            ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
             "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
            ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ]
        for (input, expected) in vectors {
            XCTAssertEqual(hex(try LibCrypto.hash(.sha256, Array(input.utf8))), expected, "SHA-256(\"\(input)\")")
            XCTAssertEqual(hex(SHA256.hash(Array(input.utf8))), expected, "sha256.c: SHA-256(\"\(input)\")")
        }
        // FIPS 180-2 appendix B.3: one million "a".
        XCTAssertEqual(hex(SHA256.hash([UInt8](repeating: 0x61, count: 1_000_000))),
                       "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// sha256.c against OpenSSL for every length across the padding boundaries (55, 56, 63, 64…),
    /// and fed in pieces of every size, so that the buffering cannot be wrong unnoticed.
    func testOwnSHA256AgreesWithOpenSSL() throws {
        var generator = SystemRandomNumberGenerator()
        for length in 0...300 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            XCTAssertEqual(SHA256.hash(bytes), try LibCrypto.hash(.sha256, bytes), "length \(length)")
            XCTAssertEqual(SHA256.hash(bytes[...]), SHA256.hash(bytes), "a slice hashes in place")
        }
        let data = (0..<777).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        for piece in 1...130 {
            var ctx = dids_sha256_ctx()
            dids_sha256_init(&ctx)
            var offset = 0
            while offset < data.count {
                let end = min(offset + piece, data.count)
                data[offset..<end].withUnsafeBytes { dids_sha256_update(&ctx, $0.baseAddress, $0.count) }
                offset = end
            }
            var out = [UInt8](repeating: 0, count: 32)
            dids_sha256_final(&ctx, &out)
            XCTAssertEqual(out, try LibCrypto.hash(.sha256, data), "pieces of \(piece)")
        }
    }

    /// RFC 4231, section 4: test cases 1, 2, 3, 4, 6 and 7 (5 truncates the output).
    func testHMACSHA256RFC4231() throws {
        let block131 = [UInt8](repeating: 0xaa, count: 131)
        let vectors: [([UInt8], [UInt8], String)] = [
            ([UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8),
             "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
            (Array("Jefe".utf8), Array("what do ya want for nothing?".utf8),
             "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
            ([UInt8](repeating: 0xaa, count: 20), [UInt8](repeating: 0xdd, count: 50),
             "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
            (Array(1...25), [UInt8](repeating: 0xcd, count: 50),
             "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
            (block131, Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
             "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
            (block131, Array(("This is a test using a larger than block-size key and a larger than block-size data. "
                              + "The key needs to be hashed before being used by the HMAC algorithm.").utf8),
             "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
        ]
        for (index, (key, message, expected)) in vectors.enumerated() {
            XCTAssertEqual(hex(SHA256.hmac(key: key, message: message)), expected, "RFC 4231 vector #\(index)")
        }
    }
}
