import CDeviceIDAPI
import CDeviceIDTPM

/// The device's side of attestation (docs/HARDWARE-ID.md, "Attestation"), in wire format v1:
/// JSON objects with base64 fields, each TPM structure in the TPM's own marshalled form.
///
/// 1. `attestationEnrolment(for:)` → an enrolment request (the app id, the certificates of the EKs
///    the TPM holds, and the app's attestation key's public area) for the attestation CA the
///    deployment chose, which picks one of the EKs;
/// 2. `attestationActivation(for:challenge:)` → the response to the CA's challenge, which only
///    the TPM holding both the EK and the AK can give (TPM2_ActivateCredential); the CA then
///    certifies the AK for that app;
/// 3. `attestation(for:nonce:akCertificate:)` → evidence for the app's server: TPM2_Certify of the
///    app's key by the app's AK over the server's nonce, with the AK certificate.
///
/// Each app has its own attestation key, derived, not stored: a primary of the owner hierarchy
/// whose template's unique is a hash of the app id, the same on every call on one TPM: no key is
/// common to two apps' servers (only the CA sees every enrolment and the EK), and TPM2_Certify by
/// an owner-hierarchy key has the TPM's reset and restart counts and firmware version obfuscated.
/// The TPM's clock stays visible in what it certifies.
package enum TPMAttestation {
    static let wireVersion = 1

    /// The largest message read (a challenge, an AK certificate message): DEVICEID_MESSAGE_MAX.
    package static var maximumMessageSize: Int { Int(DEVICEID_MESSAGE_MAX) }

    /// The nonce a server may choose, in bytes: the header's DEVICEID_NONCE_MIN to _MAX.
    package static var nonceSizes: ClosedRange<Int> { Int(DEVICEID_NONCE_MIN)...Int(DEVICEID_NONCE_MAX) }
    package static func nonceWords(_ nonce: String = "the nonce") -> Words {
        "\(nonce) must be \(DEVICEID_NONCE_MIN) to \(DEVICEID_NONCE_MAX) bytes (32 random bytes are usual)"
    }

    /// Milliseconds for conversations that may create an EK or a platform AK (enrolment,
    /// activation): RSA key generation takes seconds on some TPMs, so never less than a minute.
    static func endorsementMilliseconds(_ configured: UInt32) -> UInt32 { max(configured, 60_000) }

    /// The DER certificate inside an EK certificate NV index: some TPMs store it after the TCG PC
    /// Client header (0x10 0x01, then a 16-bit length) or padded to the index's size. An index
    /// that holds none (empty, or bytes that are no DER SEQUENCE) is refused here, with words
    /// naming `index`, rather than sent for a CA to refuse.
    static func derCertificate(_ stored: [UInt8], index: UInt32, address: TPMAddress) throws(DeviceIDError) -> [UInt8] {
        var bytes = stored[...]
        if bytes.count > 5, bytes[bytes.startIndex] == 0x10, bytes[bytes.startIndex + 1] == 0x01 {
            bytes = bytes.dropFirst(5)
        }
        guard let size = derSize(bytes) else {
            throw DeviceIDError(.io, "the TPM at \(address) holds no DER certificate in NV index "
                                    + "\(TPMConversation.hex(index)) (\(stored.count) bytes that are not one): nothing "
                                    + "was sent").about(.tpm)
        }
        return Array(bytes.prefix(size))
    }

    /// The DER certificates one after another at the start of an EK chain NV index, without the
    /// padding after them (profile 2.5, §2.2.1.5.2).
    static func derCertificates(_ stored: [UInt8]) -> [UInt8] {
        var rest = stored[...], certificates = [UInt8]()
        while let size = derSize(rest) {
            certificates += rest.prefix(size)
            rest = rest.dropFirst(size)
        }
        return certificates
    }

    /// The size of the DER SEQUENCE that `bytes` start with, when they hold it whole.
    private static func derSize(_ bytes: ArraySlice<UInt8>) -> Int? {
        let start = bytes.startIndex
        guard bytes.count >= 2, bytes[start] == 0x30 else { return nil }
        var length = Int(bytes[start + 1]), header = 2
        if length & 0x80 != 0 {
            let digits = length & 0x7f
            guard (1...3).contains(digits), bytes.count >= 2 + digits else { return nil }
            length = 0
            for k in 0..<digits { length = length << 8 | Int(bytes[start + 2 + k]) }
            header += digits
        }
        return header + length <= bytes.count ? header + length : nil
    }

    static func message(_ type: WireMessage) -> FlatJSON {
        var json = FlatJSON()
        json.set("v", wireVersion)
        json.set("type", type.rawValue)
        return json
    }

    static func parse(_ text: String, type: WireMessage) throws(DeviceIDError) -> FlatJSON {
        guard let json = FlatJSON(parsing: text) else {
            throw DeviceIDError(.invalidArgument, "not a DeviceID message: a JSON object of strings and integers is expected")
        }
        guard json.integer("v") == wireVersion else {
            throw DeviceIDError(.unsupported, "the message is not of wire format version \(wireVersion)")
        }
        guard json.string("type") == type.rawValue else {
            throw DeviceIDError(.invalidArgument, "the message is not a \(type.rawValue)")
        }
        return json
    }

    static func bytes(_ json: FlatJSON, _ key: String) throws(DeviceIDError) -> [UInt8] {
        guard let text = json.string(key), let bytes = Base64.decode(text) else {
            throw DeviceIDError(.invalidArgument, "the message's \"\(key)\" is missing or not base64")
        }
        return bytes
    }

    /// The enrolment request for `appID`'s attestation key:
    /// `{"v":1,"type":"deviceid.enrolment-request","app_id":…,"ek_kind":…,"ek_certificate":…,"ak_public":…}`,
    /// with the certificate of the first EK kind (in `EndorsementKind.all`'s order) the TPM holds
    /// and can make, `ek_certificate_<kind>` for each other one (the CA chooses among them), and
    /// `ek_chain`, the DER certificates of the EK chain indices, when the TPM holds any. A TPM with
    /// no EK certificate in NV sends `ek_public` (the L-1 EK's TPMT_PUBLIC) in place of
    /// `ek_certificate`, for a CA given the certificate out of band, and, where it holds a platform
    /// AK (`PlatformAK`), `platform_ak` and `platform_ak_certificate`, for a CA that trusts its
    /// cloud's root (the platform-ak route).
    static func enrolment(for appID: String, address: TPMAddress, milliseconds: UInt32) throws(DeviceIDError) -> String {
        let unique = HardwareIdentity.attestationKeyUnique(appID: appID)
        var found: Endorsement = try TPMConversation.run(address, milliseconds: milliseconds) { tpm, failure in
            guard let survey = EndorsementSurvey.of(tpm, &failure) else { return nil }
            var found = Endorsement(survey: survey)
            for kind in found.survey.usable {
                let (ok, certificate) = TPMConversation.withBuffer(capacity: 8192) {
                    dids_tpm_ek_certificate(tpm, kind.raw, &$0, &failure)
                }
                guard ok != 0 else { return nil }
                found.certificates.append((kind, certificate))
            }
            if found.survey.certificateOnline {
                let (ok, ek) = TPMConversation.withBuffer(capacity: 1024) {
                    dids_tpm_ek_public(tpm, EndorsementSurvey.online.raw, &$0, &failure)
                }
                guard ok != 0 else { return nil }
                found.ekPublic = ek
                guard PlatformAK.find(tpm, &failure, into: &found.platform) else { return nil }
            } else if found.certificates.isEmpty {
                return found
            }
            var chain = [UInt32](repeating: 0, count: 8)
            guard dids_tpm_ek_chain_indices(tpm, &chain, &failure) != 0 else { return nil }
            for k in 0..<256 where chain[k / 32] & 1 << (k % 32) != 0 {
                let (ok, part) = TPMConversation.withBuffer(capacity: 8192) {
                    dids_tpm_ek_chain_part(tpm, UInt32(k), &$0, &failure)
                }
                guard ok != 0 else { return nil }
                found.chain += derCertificates(part)
            }
            let (ok, ak) = TPMConversation.withBuffer(capacity: 512) { ak in
                unique.withUnsafeBufferPointer { dids_tpm_ak_public(tpm, $0.baseAddress, &ak, &failure) }
            }
            found.akPublic = ak
            return ok != 0 ? found : nil
        }
        for k in found.certificates.indices {
            let (kind, stored) = found.certificates[k]
            found.certificates[k].1 = try derCertificate(stored, index: dids_tpm_ek_certificate_index(kind.raw),
                                                         address: address)
        }
        var json = Self.message(.enrolmentRequest)
        json.set("app_id", appID)
        if let ekPublic = found.ekPublic {
            json.set("ek_kind", EndorsementSurvey.online.name)
            json.set("ek_public", Base64.encode(ekPublic))
            if let (platform, stored) = found.platform {
                let certificate = try derCertificate(stored, index: platform.certificateIndex, address: address)
                json.set("platform_ak", platform.name)
                json.set("platform_ak_certificate", Base64.encode(certificate))
            }
        } else {
            guard let (kind, certificate) = found.certificates.first else {
                throw found.survey.noneUsable(at: address.description).about(.tpm)
            }
            json.set("ek_kind", kind.name)
            json.set("ek_certificate", Base64.encode(certificate))
        }
        for (other, certificate) in found.certificates.dropFirst() {
            json.set("ek_certificate_\(other.name)", Base64.encode(certificate))
        }
        if !found.chain.isEmpty { json.set("ek_chain", Base64.encode(found.chain)) }
        json.set("ak_public", Base64.encode(found.akPublic))
        return json.text
    }

    /// What an enrolment reads of the TPM's endorsement: the certificates as their NV indices hold
    /// them until the conversation ends, then their DER.
    private struct Endorsement {
        let survey: EndorsementSurvey
        var certificates = [(EndorsementKind, [UInt8])]()
        var chain = [UInt8]()
        var akPublic = [UInt8]()
        /// The EK's TPMT_PUBLIC, when the TPM holds no EK certificate (EndorsementSurvey.online).
        var ekPublic: [UInt8]?
        /// The platform AK and its certificate, when the TPM holds no EK certificate but one of those.
        var platform: (PlatformAK, [UInt8])?
    }

    /// The response to the enrolment challenge for `appID`'s attestation key
    /// (`"type":"deviceid.enrolment-challenge"`, with `id`, `credential_blob`,
    /// `encrypted_secret`, and `ek_kind`, the EK the CA chose: L-1 where absent): the credential
    /// the TPM recovered; and for each `credential_blob_<kind>` and `encrypted_secret_<kind>` (a
    /// secret the CA sealed to another EK the request offered), `credential_<kind>`. A challenge of `"route":"platform-ak"` (with `platform_ak` and `nonce`)
    /// is answered by `PlatformAK.response`.
    static func activation(for appID: String, challenge: String, address: TPMAddress,
                           milliseconds: UInt32) throws(DeviceIDError) -> String {
        let json = try Self.parse(challenge, type: .enrolmentChallenge)
        guard let id = json.string("id") else { throw DeviceIDError(.invalidArgument, "the challenge has no \"id\"") }
        if let route = json.string("route") {
            guard route == "platform-ak" else {
                throw DeviceIDError(.unsupported, "the challenge is for the enrolment route \"\(route)\", which DeviceID does "
                                        + "not know").about(.tpm)
            }
            let name = json.string("platform_ak") ?? ""
            guard let platform = PlatformAK(named: name) else {
                throw DeviceIDError(.unsupported, "the challenge is for the platform AK \"\(name)\", which DeviceID does not "
                                        + "know").about(.tpm)
            }
            return try platform.response(to: json, id: id, appID: appID, address: address, milliseconds: milliseconds)
        }
        let blob = try Self.bytes(json, "credential_blob"), secret = try Self.bytes(json, "encrypted_secret")
        let kind = try json.string("ek_kind").map { (name) throws(DeviceIDError) -> EndorsementKind in
            guard let kind = EndorsementKind(named: name) else {
                throw DeviceIDError(.unsupported, "the challenge is for an EK of kind \"\(name)\", which DeviceID does not know")
                    .about(.tpm)
            }
            return kind
        } ?? .rsaLowRange
        // The secrets the CA sealed to the TPM's other EKs: answering them proves to the CA that
        // they are one TPM's, which is then one device for its limits and revocations.
        var sealed = [(kind, blob, secret)]
        for other in EndorsementKind.all where other != kind {
            guard json.string("credential_blob_\(other.name)") != nil else { continue }
            sealed.append((other, try Self.bytes(json, "credential_blob_\(other.name)"),
                           try Self.bytes(json, "encrypted_secret_\(other.name)")))
        }
        let unique = HardwareIdentity.attestationKeyUnique(appID: appID)
        let credentials: [[UInt8]] = try TPMConversation.run(address, milliseconds: milliseconds) { tpm, failure in
            var credentials = [[UInt8]]()
            for (ek, blob, secret) in sealed {
                let (ok, credential) = TPMConversation.withBuffer(capacity: 64) { out in
                    unique.withUnsafeBufferPointer { u in
                        blob.withUnsafeBufferPointer { b in
                            secret.withUnsafeBufferPointer { s in
                                dids_tpm_activate(tpm, ek.raw, u.baseAddress, b.baseAddress, b.count, s.baseAddress,
                                                  s.count, &out, &failure)
                            }
                        }
                    }
                }
                guard ok != 0 else { return nil }
                credentials.append(credential)
            }
            return credentials
        }
        var response = Self.message(.enrolmentResponse)
        response.set("id", id)
        response.set("credential", Base64.encode(credentials[0]))
        for ((other, _, _), credential) in zip(sealed, credentials).dropFirst() {
            response.set("credential_\(other.name)", Base64.encode(credential))
        }
        return response.text
    }

    /// Evidence for an app's server: TPM2_Certify of the app key of `appID` by the app's
    /// attestation key over `nonce` (1 to 64 bytes the server chose), with the AK certificate message the
    /// CA issued (`"type":"deviceid.ak-certificate"`) when given. The `hardware_id` in it is
    /// `hardwareID(for: appID)`.
    static func evidence(for appID: String, nonce: [UInt8], akCertificate: String?, address: TPMAddress,
                         milliseconds: UInt32) throws(DeviceIDError) -> String {
        guard nonceSizes.contains(nonce.count) else { throw DeviceIDError(.invalidArgument, nonceWords()) }
        let certificate = try akCertificate.map { (text) throws(DeviceIDError) -> [UInt8] in
            try Self.bytes(try Self.parse(text, type: .akCertificate), "certificate")
        }
        let akUnique = HardwareIdentity.attestationKeyUnique(appID: appID), appUnique = HardwareIdentity.unique(appID: appID)
        let certified = try TPMConversation.run(address, milliseconds: milliseconds) { tpm, failure in
            TPMConversation.certify(tpm, &failure, ak: akUnique, DIDS_TPM_APP_KEY, appUnique, over: nonce)
        }
        var json = Self.message(.attestation)
        json.set("app_id", appID)
        json.set("hardware_id", HardwareIdentity.id(fromName: certified.certifiedName).uuidString)
        json.set("nonce", Base64.encode(nonce))
        json.set("app_public", Base64.encode(certified.certifiedPublic))
        json.set("ak_public", Base64.encode(certified.akPublic))
        json.set("attest", Base64.encode(certified.attest))
        json.set("signature", Base64.encode(certified.signature))
        if let certificate { json.set("ak_certificate", Base64.encode(certificate)) }
        return json.text
    }
}
