import CDeviceIDTPM

/// The structures of WebAuthn (W3C Web Authentication Level 3) that App Attest for Linux emits:
/// authenticator data, the credential's COSE key, and the "tpm" attestation statement (§8.3),
/// in the bytes any WebAuthn verifier reads (docs/HARDWARE-ID.md, "App Attest for Linux").
///
/// The relying party is the app: `rpIdHash` is SHA-256 of the app id, as App Attest hashes the
/// App ID. The credential is the app's credential key (HardwareIdentity.credentialKeyUnique),
/// which the TPM derives again on every call; its id is SHA-256 of its public area, the digest
/// in its Name.
enum WebAuthnTPM {
    /// DeviceID's AAGUID, d6dbaaeb-f39d-47a1-b8de-ee391e4be274: the authenticator model "DeviceID
    /// on a TPM 2.0", the same on every device (it names no device).
    static let aaguid: [UInt8] = [0xd6, 0xdb, 0xaa, 0xeb, 0xf3, 0x9d, 0x47, 0xa1,
                                  0xb8, 0xde, 0xee, 0x39, 0x1e, 0x4b, 0xe2, 0x74]
    /// Authenticator data flags (§6.1): AT (attested credential data follows). UP and UV stay
    /// clear because no person is asked anything; BE and BS stay clear because the key can never
    /// leave the TPM (fixedTPM), so it is never backed up.
    static let attestedCredentialFlag: UInt8 = 0x40
    /// COSE algorithm ES256 (ECDSA with SHA-256 on P-256): the credential's and the AK's.
    static let es256: Int64 = -7
    static let clientDataHashSize = 32

    static func rpIDHash(_ appID: String) -> [UInt8] { SHA256.hash(Array(appID.utf8)) }

    /// The credential id of the credential key whose marshalled TPMT_PUBLIC is `publicArea`.
    static func credentialID(_ publicArea: [UInt8]) -> [UInt8] { SHA256.hash(publicArea) }

    /// The P-256 point (x and y, 32 bytes each, left-padded) of a marshalled ECC TPMT_PUBLIC;
    /// nil for any other key.
    static func point(ofPublicArea p: [UInt8]) -> (x: [UInt8], y: [UInt8])? {
        var i = 0
        func u16() -> Int? {
            guard i + 2 <= p.count else { return nil }
            defer { i += 2 }
            return Int(p[i]) << 8 | Int(p[i + 1])
        }
        func parameter() -> [UInt8]? {
            guard let n = u16(), n <= 32, i + n <= p.count else { return nil }
            defer { i += n }
            return [UInt8](repeating: 0, count: 32 - n) + p[i..<i + n]
        }
        let eccType = Int(DIDS_TPM2_ALG_ECC), null = Int(DIDS_TPM2_ALG_NULL), p256 = Int(DIDS_TPM2_ECC_NIST_P256)
        guard u16() == eccType, u16() != nil else { return nil }  // type, nameAlg
        i += 4                                                     // objectAttributes
        guard let policy = u16(), i + policy <= p.count else { return nil }
        i += policy
        guard u16() == null, let scheme = u16() else { return nil }  // symmetric, scheme
        if scheme != null { guard u16() != nil else { return nil } } // the scheme's hash
        guard u16() == p256, u16() == null, let x = parameter(), let y = parameter(), i == p.count else { return nil }
        return (x, y)
    }

    /// The credential public key as a COSE_Key (RFC 9053 EC2; WebAuthn §6.5.1.1's example shape).
    static func coseKey(x: [UInt8], y: [UInt8]) -> CBOR {
        .map([CBOR.Entry(key: .int(1), value: .int(2)),        // kty: EC2
              CBOR.Entry(key: .int(3), value: .int(es256)),    // alg
              CBOR.Entry(key: .int(-1), value: .int(1)),       // crv: P-256
              CBOR.Entry(key: .int(-2), value: .bytes(x)),
              CBOR.Entry(key: .int(-3), value: .bytes(y))])
    }

    /// Authenticator data (§6.1): rpIdHash ‖ flags ‖ signCount (big-endian), then the attested
    /// credential data (AAGUID ‖ credential id length ‖ credential id ‖ COSE key) when given.
    static func authenticatorData(appID: String, flags: UInt8, counter: UInt32,
                                  credential: (id: [UInt8], key: CBOR)?) -> [UInt8] {
        var data = rpIDHash(appID) + [flags]
        data += [UInt8(counter >> 24), UInt8(counter >> 16 & 0xff), UInt8(counter >> 8 & 0xff), UInt8(counter & 0xff)]
        if let credential {
            data += aaguid + [UInt8(credential.id.count >> 8), UInt8(credential.id.count & 0xff)] + credential.id
            data += credential.key.encoded
        }
        return data
    }

    /// The DER ECDSA-Sig-Value (RFC 3279 §2.2.3: SEQUENCE of INTEGER r, s) of a marshalled
    /// TPMT_SIGNATURE of ECDSA with SHA-256 on P-256; nil for anything else.
    static func derSignature(ofTPMSignature t: [UInt8]) -> [UInt8]? {
        guard t.count >= 8, Int(t[0]) << 8 | Int(t[1]) == Int(DIDS_TPM2_ALG_ECDSA),
              Int(t[2]) << 8 | Int(t[3]) == Int(DIDS_TPM2_ALG_SHA256) else { return nil }
        var i = 4
        func integer() -> [UInt8]? {
            guard i + 2 <= t.count else { return nil }
            let n = Int(t[i]) << 8 | Int(t[i + 1])
            guard n >= 1, n <= 32, i + 2 + n <= t.count else { return nil }  // P-256: short-form lengths
            var value = Array(t[i + 2..<i + 2 + n].drop { $0 == 0 })
            i += 2 + n
            if value.isEmpty || value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        guard let r = integer(), let s = integer(), i == t.count else { return nil }
        return [0x30, UInt8(r.count + s.count)] + r + s
    }

    /// The attestation object (§6.5.4) of format "tpm" (§8.3): the statement's `sig` is the AK's
    /// signature over `certInfo` (a TPMS_ATTEST of TPM2_Certify whose extraData is
    /// SHA-256(authData ‖ clientDataHash)), `x5c` the AK certificate and its chain.
    static func attestationObject(authenticatorData: [UInt8], certificates: [[UInt8]], signature: [UInt8],
                                  certInfo: [UInt8], publicArea: [UInt8]) -> [UInt8] {
        let statement = CBOR.map([
            CBOR.Entry(key: .text("ver"), value: .text("2.0")),
            CBOR.Entry(key: .text("alg"), value: .int(es256)),
            CBOR.Entry(key: .text("x5c"), value: .array(certificates.map { .bytes($0) })),
            CBOR.Entry(key: .text("sig"), value: .bytes(signature)),
            CBOR.Entry(key: .text("certInfo"), value: .bytes(certInfo)),
            CBOR.Entry(key: .text("pubArea"), value: .bytes(publicArea)),
        ])
        return CBOR.map([
            CBOR.Entry(key: .text("fmt"), value: .text("tpm")),
            CBOR.Entry(key: .text("attStmt"), value: statement),
            CBOR.Entry(key: .text("authData"), value: .bytes(authenticatorData)),
        ]).encoded
    }
}
