/// This machine's pin for the TPM at an address (docs/STATE.md, "TPM pins"), as the layer that
/// keeps pins hands it to a conversation (`TPMAddress.resolvedWithPin()`, Stores/TPMPins.swift):
/// the Name the key the conversation's session is salted to must have, nil where none is held yet
/// (first use); `keep` stores the Name a conversation that succeeded was salted to, when none was
/// held. A class, so that an address carrying one copies as one reference.
final class TPMPin: Sendable {
    let name: [UInt8]?
    let keep: @Sendable ([UInt8]) -> Void

    init(name: [UInt8]?, keep: @escaping @Sendable ([UInt8]) -> Void) {
        self.name = name
        self.keep = keep
    }
}
