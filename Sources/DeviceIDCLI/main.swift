import DeviceID
import Glibc

/// `deviceid`: the command-line face of the library. Errors go to stderr; exit codes in Output.swift.
func main() -> Int32 {
    let invocation: Invocation
    do {
        invocation = try Invocation(Array(CommandLine.arguments.dropFirst()))
    } catch {
        Output(json: false).write("deviceid: \(error.message)\n\n\(Commands.usage)", to: STDERR_FILENO)
        return ExitCode.usage
    }
    let output = Output(json: invocation.json)
    let identity = DeviceIdentity.shared
    if invocation.backend != nil || invocation.timeoutMilliseconds != nil || invocation.storeDirectory != nil
        || invocation.interactive {
        do throws(DeviceIDError) {
            var configuration = try identity.configuration()
            if let b = invocation.backend { configuration.backend = b }
            if let t = invocation.timeoutMilliseconds { configuration.timeoutMilliseconds = t }
            if let d = invocation.storeDirectory { configuration.storeDirectory = d }
            if invocation.interactive { configuration.interactive = true }
            if let t = invocation.interactiveTimeoutMilliseconds { configuration.interactiveTimeoutMilliseconds = t }
            try identity.configure(configuration)
        } catch {
            return output.fail(error)
        }
    }
    return Commands(identity: identity, output: output).run(invocation)
}

exit(main())
