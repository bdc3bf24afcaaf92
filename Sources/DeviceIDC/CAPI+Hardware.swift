import CDeviceIDAPI
import DeviceID

// The hardware-bound ID, its attestation and App Attest's WebAuthn messages (docs/HARDWARE-ID.md).
// Messages are returned as library-allocated NUL-terminated JSON, freed with deviceid_free().

@c @implementation
public func deviceid_hardware_id(
    _ context: OpaquePointer?, _ appID: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<CChar>?, _ outSize: Int
) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        let app = try CArguments.name(appID, "app id")
        try CArguments.checkUUIDBuffer(out, UInt(bitPattern: outSize))
        let id = try Context.instance(context).hardwareID(for: app)
        try CArguments.copy(id.uuidString, to: out, size: UInt(bitPattern: outSize))
    }
}

/// Hands `text` to the caller as a deviceid_free()-able string.
private func hand(_ text: String, to out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) throws(DeviceIDError) {
    guard let copy = Allocation.copy(Array(text.utf8)) else { throw DeviceIDError(.noMemory) }
    out.pointee = copy.assumingMemoryBound(to: CChar.self)
}

@c @implementation
public func deviceid_attest_enrolment(
    _ context: OpaquePointer?, _ appID: UnsafePointer<CChar>?,
    _ request: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
    request?.pointee = nil
    return cStatus { () throws(DeviceIDError) in
        guard let request else { throw DeviceIDError(.invalidArgument, "request is NULL") }
        let app = try CArguments.name(appID, "app id")
        try hand(try Context.instance(context).attestationEnrolment(for: app), to: request)
    }
}

@c @implementation
public func deviceid_attest_activate(
    _ context: OpaquePointer?, _ appID: UnsafePointer<CChar>?, _ challenge: UnsafePointer<CChar>?,
    _ response: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
    response?.pointee = nil
    return cStatus { () throws(DeviceIDError) in
        guard let response else { throw DeviceIDError(.invalidArgument, "response is NULL") }
        let app = try CArguments.name(appID, "app id")
        let text = try CArguments.text(challenge, "challenge")
        try hand(try Context.instance(context).attestationActivation(for: app, challenge: text), to: response)
    }
}

@c @implementation
public func deviceid_attest(
    _ context: OpaquePointer?, _ appID: UnsafePointer<CChar>?, _ nonce: UnsafeRawPointer?, _ nonceSize: Int,
    _ akCertificate: UnsafePointer<CChar>?, _ evidence: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
    evidence?.pointee = nil
    return cStatus { () throws(DeviceIDError) in
        guard let evidence else { throw DeviceIDError(.invalidArgument, "evidence is NULL") }
        let app = try CArguments.name(appID, "app id")
        guard let nonce, TPMAttestation.nonceSizes.contains(nonceSize) else {
            throw DeviceIDError(.invalidArgument, TPMAttestation.nonceWords())
        }
        let bytes = Array(UnsafeRawBufferPointer(start: nonce, count: Int(nonceSize)).bindMemory(to: UInt8.self))
        let certificate = try akCertificate.map { (p) throws(DeviceIDError) in try CArguments.text(p, "AK certificate") }
        try hand(try Context.instance(context).attestation(for: app, nonce: bytes, akCertificate: certificate), to: evidence)
    }
}

/// The 32 bytes of a client data hash argument.
private func clientDataHash(_ pointer: UnsafeRawPointer?, _ size: Int) throws(DeviceIDError) -> [UInt8] {
    guard let pointer, size == 32 else {
        throw DeviceIDError(.invalidArgument, "the client data hash must be 32 bytes (SHA-256 of the client data)")
    }
    return Array(UnsafeRawBufferPointer(start: pointer, count: size))
}

@c @implementation
public func deviceid_attest_webauthn(
    _ context: OpaquePointer?, _ appID: UnsafePointer<CChar>?, _ hash: UnsafeRawPointer?, _ hashSize: Int,
    _ akCertificate: UnsafePointer<CChar>?, _ attestation: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
    attestation?.pointee = nil
    return cStatus { () throws(DeviceIDError) in
        guard let attestation else { throw DeviceIDError(.invalidArgument, "out is NULL") }
        let app = try CArguments.name(appID, "app id")
        let digest = try clientDataHash(hash, hashSize)
        let certificate = try CArguments.text(akCertificate, "AK certificate")
        try hand(try Context.instance(context).webAuthnAttestation(for: app, clientDataHash: digest,
                                                                   akCertificate: certificate), to: attestation)
    }
}

@c @implementation
public func deviceid_assert(
    _ context: OpaquePointer?, _ appID: UnsafePointer<CChar>?, _ hash: UnsafeRawPointer?, _ hashSize: Int,
    _ assertion: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
    assertion?.pointee = nil
    return cStatus { () throws(DeviceIDError) in
        guard let assertion else { throw DeviceIDError(.invalidArgument, "out is NULL") }
        let app = try CArguments.name(appID, "app id")
        let digest = try clientDataHash(hash, hashSize)
        try hand(try Context.instance(context).webAuthnAssertion(for: app, clientDataHash: digest), to: assertion)
    }
}
