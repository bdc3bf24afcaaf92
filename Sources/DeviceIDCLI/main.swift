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
    do throws(DeviceIDError) {
        try identity.override { overrides in
            overrides.backend = invocation.backend
            overrides.timeoutMilliseconds = invocation.timeoutMilliseconds
            overrides.storeDirectory = invocation.storeDirectory
            if invocation.interactive { overrides.interactive = true }
            overrides.interactiveTimeoutMilliseconds = invocation.interactiveTimeoutMilliseconds
        }
    } catch {
        return output.fail(error)
    }
    return Commands(identity: identity, output: output).run(invocation)
}

exit(main())
