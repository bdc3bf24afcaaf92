@testable import DeviceID

/// The DeviceID status `body` failed with, or nil when it succeeded.
func errorCode(_ body: () throws -> Void) -> DeviceIDError.Code? {
    do {
        try body()
        return nil
    } catch {
        return (error as? DeviceIDError)?.code
    }
}
