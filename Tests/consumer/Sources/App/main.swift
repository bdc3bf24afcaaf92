// The code a Swift developer writes first, as the README shows it: top-level `await` reaching the
// async forms, and `catch let error as DeviceIDError` with a `switch` over its code, in a module
// of several files. It must build without a warning and print the ID the blocking call gives.
import DeviceID
import Glibc

do {
    let id = try await DeviceIdentity.shared.nonblocking.stableID(for: Settings.appID)
    let blocking = try Report.blockingID()
    precondition(id.id == blocking.id, "the async and blocking calls disagree")
    print(Report.line(for: id))
} catch let error as DeviceIDError {
    switch error.code {
    case .locked: print("the keyring is locked: unlock it and run again")
    case .timedOut: print("the keyring did not answer in time")
    default: print("deviceid: \(error)")
    }
    exit(1)
}
