import CDeviceIDLibraries
import CDeviceIDSystem

/// Authenticated encryption of a value kept in files (AES-256-GCM, through OpenSSL's libcrypto):
/// how a secret stored in a sandboxed app's files is kept at rest, keyed from the Secret portal's
/// secret for the app (`SandboxAnchor`). Layout:
///
///     offset  size  field
///     0       8     magic "DIDSEAL1"
///     8       12    nonce (random, from getrandom)
///     20      N     ciphertext
///     20+N    16    GCM tag over the ciphertext and the context (the item's store key)
///
/// The context binds a sealed value to the item it was stored as: moved to another name, it
/// does not open. A value that does not open is `.corrupt`, never "none".
enum Sealing {
    static let magic = Array("DIDSEAL1".utf8)
    static let nonceSize = 12
    static let tagSize = 16
    static let keySize = 32
    static let overhead = 8 + nonceSize + tagSize

    static func isSealed(_ bytes: [UInt8]) -> Bool {
        bytes.count >= overhead && bytes[0..<8].elementsEqual(magic)
    }

    static func seal(_ plaintext: [UInt8], key: [UInt8], context: [UInt8]) throws(DeviceIDError) -> [UInt8] {
        try seal(plaintext, key: key, context: context, nonce: try SystemRandom.bytes(nonceSize))
    }

    /// With the nonce given: known-answer tests only (a nonce is never reused under one key).
    static func seal(_ plaintext: [UInt8], key: [UInt8], context: [UInt8], nonce: [UInt8]) throws(DeviceIDError) -> [UInt8] {
        guard key.count == keySize, nonce.count == nonceSize else {
            throw DeviceIDError(.internal, "a sealing key is \(keySize) bytes and a nonce \(nonceSize)")
        }
        try OnDemandLibrary.crypto.require()
        dids_computing_begin()  // libcrypto's locks, which a child forked meanwhile must not inherit
        defer { dids_computing_end() }
        guard let cipher = dids_EVP_CIPHER_CTX_new() else { throw DeviceIDError(.noMemory) }
        defer { dids_EVP_CIPHER_CTX_free(cipher) }
        // Errors libcrypto queues here are dropped; the caller's own queued errors stay.
        dids_ERR_set_mark()
        defer { dids_ERR_pop_to_mark() }
        var body = [UInt8](repeating: 0, count: plaintext.count + 16)
        var tag = [UInt8](repeating: 0, count: tagSize)
        var produced: Int32 = 0, last: Int32 = 0
        let ok = dids_EVP_EncryptInit_ex(cipher, dids_EVP_aes_256_gcm(), nil, key, nonce) == 1
            && context.withNonEmptyBytes { dids_EVP_EncryptUpdate(cipher, nil, &last, $0, Int32($1)) } == 1
            && plaintext.withNonEmptyBytes { input, count in
                body.withUnsafeMutableBufferPointer { dids_EVP_EncryptUpdate(cipher, $0.baseAddress, &produced, input, Int32(count)) }
            } == 1
            && body.withUnsafeMutableBufferPointer { dids_EVP_EncryptFinal_ex(cipher, $0.baseAddress! + Int(produced), &last) } == 1
            && dids_EVP_CIPHER_CTX_ctrl(cipher, DIDS_EVP_CTRL_GCM_GET_TAG, Int32(tagSize), &tag) == 1
        guard ok else {
            throw DeviceIDError(.internal, "libcrypto could not seal a value (AES-256-GCM)")
        }
        return magic + nonce + body[0..<Int(produced + last)] + tag
    }

    static func open(_ sealed: [UInt8], key: [UInt8], context: [UInt8]) throws(DeviceIDError) -> [UInt8] {
        guard isSealed(sealed), key.count == keySize else { throw DeviceIDError(.corrupt, "not a sealed value") }
        let nonce = Array(sealed[8..<(8 + nonceSize)])
        let body = Array(sealed[(8 + nonceSize)..<(sealed.count - tagSize)])
        var tag = Array(sealed[(sealed.count - tagSize)...])
        try OnDemandLibrary.crypto.require()
        dids_computing_begin()  // libcrypto's locks, which a child forked meanwhile must not inherit
        defer { dids_computing_end() }
        guard let cipher = dids_EVP_CIPHER_CTX_new() else { throw DeviceIDError(.noMemory) }
        defer { dids_EVP_CIPHER_CTX_free(cipher) }
        dids_ERR_set_mark()
        defer { dids_ERR_pop_to_mark() }
        var plaintext = [UInt8](repeating: 0, count: body.count + 16)
        var produced: Int32 = 0, last: Int32 = 0
        let ok = dids_EVP_DecryptInit_ex(cipher, dids_EVP_aes_256_gcm(), nil, key, nonce) == 1
            && context.withNonEmptyBytes { dids_EVP_DecryptUpdate(cipher, nil, &last, $0, Int32($1)) } == 1
            && body.withNonEmptyBytes { input, count in
                plaintext.withUnsafeMutableBufferPointer { dids_EVP_DecryptUpdate(cipher, $0.baseAddress, &produced, input, Int32(count)) }
            } == 1
            && dids_EVP_CIPHER_CTX_ctrl(cipher, DIDS_EVP_CTRL_GCM_SET_TAG, Int32(tagSize), &tag) == 1
            && plaintext.withUnsafeMutableBufferPointer { dids_EVP_DecryptFinal_ex(cipher, $0.baseAddress! + Int(produced), &last) } == 1
        guard ok else {
            wipe(&plaintext)
            throw DeviceIDError(.corrupt, "a sealed value does not open with this app's key: altered, moved from "
                                + "another item, or sealed for another app")
        }
        let count = Int(produced + last)
        let out = Array(plaintext[0..<count])
        wipe(&plaintext)
        return out
    }
}

private extension Array where Element == UInt8 {
    /// The bytes and their count, with a valid pointer even when empty (libcrypto refuses NULL).
    func withNonEmptyBytes<R>(_ body: (UnsafePointer<UInt8>, Int) -> R) -> R {
        if isEmpty {
            var placeholder: UInt8 = 0
            return body(&placeholder, 0)
        }
        return withUnsafeBufferPointer { body($0.baseAddress!, $0.count) }
    }
}
