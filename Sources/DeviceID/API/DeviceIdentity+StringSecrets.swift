extension DeviceIdentity {
    /// Stores text (its UTF-8 bytes) as `storeSecret(_:service:account:)` stores bytes; what
    /// `secret-tool store` stores is text too. The library wipes the bytes it makes from the
    /// string; the string itself is the caller's, and Swift strings cannot be wiped (they are
    /// immutable and may be copied): keep a secret in `[UInt8]` and use the byte forms where
    /// that matters.
    @discardableResult
    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.storeSecret(_:service:account:)'")
    public func storeSecret(_ secret: String, service: String, account: String) throws(DeviceIDError) -> SecretLocation {
        var bytes = Array(secret.utf8)
        defer { wipe(&bytes) }
        return try storeSecret(bytes, service: service, account: account)
    }

    /// The secret as text, or nil when no store has it. Bytes that are not UTF-8 are `.corrupt`
    /// (never repaired into other text); the bytes read are wiped once the string is made.
    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.lookupSecretString(service:account:)'")
    public func lookupSecretString(service: String, account: String) throws(DeviceIDError) -> String? {
        guard var bytes = try lookupSecret(service: service, account: account) else { return nil }
        defer { wipe(&bytes) }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw DeviceIDError(.corrupt, "the secret is not UTF-8 text; read it with lookupSecret as bytes")
        }
        return text
    }
}
