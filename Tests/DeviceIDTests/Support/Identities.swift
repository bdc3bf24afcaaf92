@testable import DeviceID

/// The one way the Swift tests make a DeviceIdentity: a backend, a store directory of the test's
/// own, and the deadline.
/// `recheck`: the mirror's re-check interval; 0 asks the keyring on every first lookup.
func makeIdentity(_ backend: Configuration.Backend = .file, store: String,
                  timeout: UInt32 = Configuration.defaultTimeoutMilliseconds,
                  recheck: UInt32 = Configuration.defaultMirrorRecheckSeconds) -> DeviceIdentity {
    DeviceIdentity(configuration: Configuration(backend: backend, timeoutMilliseconds: timeout, storeDirectory: store,
                                                mirrorRecheckSeconds: recheck))
}
