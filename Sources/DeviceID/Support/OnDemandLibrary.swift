import CDeviceIDLibraries
import CDeviceIDTPM

/// The libraries DeviceID loads on first use rather than links (`CDeviceIDLibraries.h`): GLib,
/// libsecret, libcrypto, libdbus, and tpm2-tss's ESAPI for the hardware-bound ID. A process that loads libdeviceid, or gets its answer from the
/// mirror, maps none of them. Every path into one of them starts with `require`.
///
/// A library that cannot be loaded, or lacks a function (too old), is `.unavailable` with words
/// naming the file and the package (`.noMemory` while the process lacks the resources to load
/// it): never a crash, and never "none" — a keyring that cannot be reached because its client
/// library is missing may still hold the ID.
enum OnDemandLibrary {
    case glib, secret, crypto, dbus, tpm

    /// The loader's record of it: the TPM room declares its own (`CDeviceIDTPM`'s tss2/esys.c).
    private var id: OpaquePointer? {
        switch self {
        case .glib: dids_library_loadable(DIDS_LIBRARY_GLIB)
        case .secret: dids_library_loadable(DIDS_LIBRARY_SECRET)
        case .crypto: dids_library_loadable(DIDS_LIBRARY_CRYPTO)
        case .dbus: dids_library_loadable(DIDS_LIBRARY_DBUS)
        case .tpm: dids_tpm_library()
        }
    }

    /// What loading it came to.
    enum State {
        case loaded
        /// Missing, not a library, or too old: final for the process (`.unavailable`).
        case absent(DeviceIDError)
        /// The process lacked memory, address space or descriptors: a later call tries again.
        case failed(DeviceIDError)
    }

    /// Loads the library (once, or again after a passing failure) and says what came of it.
    func state() -> State {
        switch dids_loadable_load(id) {
        case Int32(DIDS_LIBRARY_LOADED): .loaded
        case Int32(DIDS_LIBRARY_ABSENT): .absent(DeviceIDError(.unavailable, failure))
        // Installed, and not to be done without: an error for every call that needs it.
        case Int32(DIDS_LIBRARY_HALF_LOADED): .failed(DeviceIDError(.unavailable, failure))
        default: .failed(DeviceIDError(.noMemory, failure))
        }
    }

    /// Loads the library or throws why it cannot be.
    func require() throws(DeviceIDError) {
        switch state() {
        case .loaded: return
        case .absent(let error), .failed(let error): throw error
        }
    }

    /// Why loading failed ("" when it did not).
    var failure: String {
        var text = [CChar](repeating: 0, count: 512)
        text.withUnsafeMutableBufferPointer { dids_loadable_failure(id, $0.baseAddress, $0.count) }
        return text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Whether this process has loaded it (does not load it).
    var isLoaded: Bool { dids_loadable_is_loaded(id) != 0 }
}
