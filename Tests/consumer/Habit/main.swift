// A Swift developer's habit, which the build must refuse with words naming the async form: `await`
// put on the blocking call in top-level code. Swift 6.3.1 compiled it, and the program crashed at
// run time (signal 6, "Found outside of lifetime use" in async_Main); the blocking calls are
// `@available(*, noasync)`, so it is an error now. scripts/stages/consumer builds it in place of
// Sources/App/main.swift and expects that error.
import DeviceID

do {
    let id = try await DeviceIdentity.shared.stableID(for: Settings.appID)
    print(Report.line(for: id))
} catch let error as DeviceIDError {
    print("deviceid: \(error)")
}
