import CDeviceIDTPM

/// The endorsement keys a TPM offers for attestation (docs/HARDWARE-ID.md, "Endorsement keys"):
/// the TCG EK Credential Profile's templates DeviceID knows (`dids_tpm_ek`), found by the
/// certificates the TPM holds in NV.
struct EndorsementKind: Equatable {
    let raw: dids_tpm_ek

    /// Every kind, in the device's order of preference.
    static let all: [EndorsementKind] = (0..<Int(DIDS_TPM_EK_KINDS.rawValue)).map {
        EndorsementKind(raw: dids_tpm_ek(rawValue: UInt32($0)))
    }
    /// The kind a challenge without `ek_kind` is for (wire format v1 before it was added).
    static let rsaLowRange = EndorsementKind(raw: DIDS_TPM_EK_L1)

    /// The profile's name: "L-1", "L-2", "H-1" … "H-7".
    var name: String {
        let k = Int(raw.rawValue)
        return k < 2 ? "L-\(k + 1)" : "H-\(k < 6 ? k - 1 : k)"  // H-5 (SM2) is not among them
    }

    init(raw: dids_tpm_ek) { self.raw = raw }

    init?(named name: String) {
        guard let kind = Self.all.first(where: { $0.name == name }) else { return nil }
        self = kind
    }

    var certificateIndex: UInt32 { dids_tpm_ek_certificate_index(raw) }
    var templateIndex: UInt32 { dids_tpm_ek_template_index(raw) }

    static func hex(_ index: UInt32) -> String { TPMConversation.hex(index) }
}

/// What a TPM's EK NV indices say: the kinds whose certificate it holds, those of them it makes
/// from a template in NV, and those DeviceID cannot use because that template is not one it can.
struct EndorsementSurvey {
    let present: UInt32
    /// Certified kinds whose template in NV is no TPMT_PUBLIC, or another kind of key than the
    /// profile's (`dids_tpm_ek_template_fits`).
    let unfit: [EndorsementKind]

    /// The survey of the TPM of conversation `tpm`; nil with `failure` set when the TPM failed.
    static func of(_ tpm: OpaquePointer, _ failure: inout dids_tpm_failure) -> EndorsementSurvey? {
        var present: UInt32 = 0
        guard dids_tpm_ek_indices(tpm, &present, &failure) != 0 else { return nil }
        var unfit = [EndorsementKind]()
        for kind in EndorsementSurvey(present: present, unfit: []).templated {
            var fits: Int32 = 0
            guard dids_tpm_ek_template_fits(tpm, kind.raw, &fits, &failure) != 0 else { return nil }
            if fits == 0 { unfit.append(kind) }
        }
        return EndorsementSurvey(present: present, unfit: unfit)
    }

    func holds(_ index: UInt32) -> Bool {
        index >= DIDS_TPM_EK_NV_FIRST && index - DIDS_TPM_EK_NV_FIRST < 32
            && present & (1 << (index - DIDS_TPM_EK_NV_FIRST)) != 0
    }

    var certified: [EndorsementKind] { EndorsementKind.all.filter { holds($0.certificateIndex) } }
    /// Certified kinds whose template index is populated: the TPM makes that EK from it.
    var templated: [EndorsementKind] { certified.filter { $0.templateIndex != 0 && holds($0.templateIndex) } }
    var usable: [EndorsementKind] { certified.filter { !unfit.contains($0) } }

    /// What an unfit template is, in words.
    static let unfitWords = "DeviceID cannot use: not a TPMT_PUBLIC, or a key of another type, name algorithm, "
        + "policy, symmetric key, scheme or size than the profile's template (only attributes, exponent and "
        + "unique may differ)"

    /// No EK certificate in NV at all: a firmware TPM whose certificate is published online only
    /// (Intel PTT, AMD fTPM), or a virtual TPM without one. The request then carries the public
    /// area of `online`'s EK, for a CA given its certificate out of band.
    var certificateOnline: Bool { certified.isEmpty }
    static let online = EndorsementKind.rsaLowRange

    /// The words for a TPM without an EK certificate in NV.
    static var onlineWords: Words { "the TPM holds no EK certificate in NV (none of the TCG EK Credential Profile's indices "
        + "0x01c00002-0x01c0001e): a firmware TPM whose EK certificate is published online only (Intel PTT, AMD "
        + "fTPM) or a virtual TPM without one; the enrolment request carries EK \(online.name)'s public key "
        + "(ek_public) for a Privacy CA given its certificate out of band" }

    /// Why no EK can be used, in words: every certificate the TPM holds is of an EK it makes from
    /// a template in NV that DeviceID cannot use.
    func noneUsable(at address: String) -> DeviceIDError {
        let kind = unfit.first ?? EndorsementKind.rsaLowRange
        return DeviceIDError(.unsupported, "the TPM at \(address) holds an EK certificate of kind \(kind.name), but makes "
                                 + "that EK from the template in NV index \(EndorsementKind.hex(kind.templateIndex)), "
                                 + "which " + Self.unfitWords + "; it holds no other EK certificate")
    }
}
