import CDeviceIDLibc

/// Overwriting memory that held secret material, in a way the optimizer may not remove — the one
/// place that does it, for the library, the C thunks and the CLI. Swift apps holding a secret from
/// `DeviceIdentity.lookupSecret` can use it too.
public enum SecretMemory {
    @inline(never)
    public static func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        explicit_bzero(base, buffer.count)
    }

    public static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { wipe($0) }
    }
}

func wipe(_ bytes: inout [UInt8]) {
    SecretMemory.wipe(&bytes)
}
