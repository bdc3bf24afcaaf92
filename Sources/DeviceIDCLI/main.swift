import DeviceID
import CDeviceIDLibc
import CDeviceIDCLI

/// `deviceid`: the command-line face of the library. Errors go to stderr; exit codes in Output.swift.
/// Arguments come from the C runtime (CDeviceIDCLI): Embedded Swift has no `CommandLine`.
func main() -> Int32 {
    let arguments = (1..<max(dids_cli_argc(), 1)).map { String(cString: dids_cli_argument($0)!) }
    let invocation: Invocation
    do throws(Invocation.UsageError) {
        invocation = try Invocation(arguments)
    } catch {
        return Output(json: Invocation.wantsJSON(arguments)).usageError(error.message, hint: Help.hint(Invocation.command(arguments)))
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
