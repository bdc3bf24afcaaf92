import CDeviceIDLibraries

/// The libraries DeviceID loads on first use rather than links (`CDeviceIDLibraries.h`): GLib,
/// libsecret, libcrypto, libdbus. A process that loads libdeviceid, or gets its answer from the
/// mirror, maps none of them. Every path into one of them starts with `require`.
///
/// A library that cannot be loaded, or lacks a function (too old), is `.unavailable` with words
/// naming the file and the package: never a crash, and never "none" — a keyring that cannot be
/// reached because its client library is missing may still hold the ID.
enum OnDemandLibrary {
    case glib, secret, crypto, dbus

    private var id: dids_library {
        switch self {
        case .glib: DIDS_LIBRARY_GLIB
        case .secret: DIDS_LIBRARY_SECRET
        case .crypto: DIDS_LIBRARY_CRYPTO
        case .dbus: DIDS_LIBRARY_DBUS
        }
    }

    /// Loads the library (once per process) or says why it cannot be.
    func require() throws(DeviceIDError) {
        guard dids_library_load(id) == 0 else { throw DeviceIDError(.unavailable, failure) }
    }

    /// Loads the library (once per process): whether it is usable.
    func load() -> Bool { dids_library_load(id) == 0 }

    /// Why loading failed ("" when it did not).
    var failure: String { String(cString: dids_library_failure(id)) }

    /// Whether this process has loaded it (does not load it).
    var isLoaded: Bool { dids_library_is_loaded(id) != 0 }
}
