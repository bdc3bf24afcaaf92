import CDeviceIDTPM

/// What `deviceid doctor` says of the TPM: who made it, its firmware, the EK certificates it holds
/// and so how it can enrol with a Privacy CA (docs/HARDWARE-ID.md, "Endorsement keys").
struct TPMSurvey {
    /// TPM_PT_MANUFACTURER's four characters ("IBM", "INTC", "AMD", "MSFT"…), trailing blanks cut.
    let manufacturer: String
    /// TPM_PT_FIRMWARE_VERSION_1 and _2, as the TPM reports them.
    let firmware: (UInt32, UInt32)
    let endorsement: EndorsementSurvey
    /// The platform AK that certifies app AKs where the TPM holds no EK certificate (`PlatformAK`).
    let platform: PlatformAK?

    static func of(_ address: TPMAddress, milliseconds: UInt32) throws(DeviceIDError) -> TPMSurvey {
        try TPMConversation.run(address, milliseconds: milliseconds) { tpm, failure in
            let first = DIDS_TPM2_PT_MANUFACTURER, count = DIDS_TPM2_PT_FIRMWARE_VERSION_2 - first + 1
            var values = [UInt32](repeating: 0, count: Int(count))
            guard dids_tpm_properties(tpm, first, count, &values, &failure) != 0,
                  let endorsement = EndorsementSurvey.of(tpm, &failure) else { return nil }
            var platform: (PlatformAK, [UInt8])?
            if endorsement.certificateOnline {
                guard PlatformAK.find(tpm, &failure, into: &platform) else { return nil }
            }
            let vendor = values[0]
            let letters = [vendor >> 24, vendor >> 16, vendor >> 8, vendor].map { UInt8(truncatingIfNeeded: $0) }
            let name = String(decoding: letters.filter { (0x21...0x7e).contains($0) }, as: UTF8.self)
            return TPMSurvey(manufacturer: name.isEmpty ? "unknown" : name,
                             firmware: (values[Int(DIDS_TPM2_PT_FIRMWARE_VERSION_1 - first)],
                                        values[Int(DIDS_TPM2_PT_FIRMWARE_VERSION_2 - first)]),
                             endorsement: endorsement, platform: platform?.0)
        }
    }

    /// "IBM, firmware 0x20191023.0x00163636; EK certificates L-1, H-3; attestation with a Privacy CA
    /// through EK L-1 (or H-3, as the CA chooses)", or why attestation cannot work.
    func words(at address: TPMAddress) -> (usable: Bool, text: String) {
        var text: Words = "\(address): \(manufacturer), firmware \(TPMConversation.hex(firmware.0)).\(TPMConversation.hex(firmware.1))"
        let certified = endorsement.certified.map { $0.name }
        text += "; EK certificates: \(certified.isEmpty ? "none" : certified.joined(separator: ", "))"
        if endorsement.certificateOnline, let platform {
            return (true, (text + "; attestation: with a Privacy CA through the platform AK \(platform.described), or "
                        + "given EK \(EndorsementSurvey.online.name)'s certificate out of band").text)
        }
        if endorsement.certificateOnline {
            return (true, (text + "; attestation: with a Privacy CA given EK \(EndorsementSurvey.online.name)'s certificate "
                        + "out of band: \(EndorsementSurvey.onlineWords)").text)
        }
        guard let first = endorsement.usable.first else {
            return (false, (text + "; attestation: \(endorsement.noneUsable(at: address.description).detail)").text)
        }
        let others = endorsement.usable.dropFirst().map { $0.name }
        text += "; attestation: with a Privacy CA through EK \(first.name)"
        if !others.isEmpty { text += " (or \(others.joined(separator: ", ")), as the CA chooses)" }
        for kind in endorsement.templated {
            let index = EndorsementKind.hex(kind.templateIndex)
            if endorsement.unfit.contains(kind) {
                text += "; EK \(kind.name) not used: its template in NV index \(index) is one \(EndorsementSurvey.unfitWords)"
            } else {
                text += "; EK \(kind.name) made from the template in NV index \(index)"
            }
        }
        return (true, text.text)
    }
}
