@testable import DeviceID

/// The one way the Swift tests make a DeviceIdentity: a backend, a store directory of the test's
/// own, and the deadline.
func makeIdentity(_ backend: Configuration.Backend = .file, store: String,
                  timeout: UInt32 = Configuration.defaultTimeoutMilliseconds) -> DeviceIdentity {
    DeviceIdentity(configuration: Configuration(backend: backend, timeoutMilliseconds: timeout, storeDirectory: store))
}
