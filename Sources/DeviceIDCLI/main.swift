import DeviceID
import CDeviceIDLibc
import CDeviceIDCLI

/// `deviceid`: the command-line face of the library. Errors go to stderr; exit codes in Output.swift.
/// Arguments come from the C runtime (CDeviceIDCLI): Embedded Swift has no `CommandLine`.
func main() -> Int32 {
    var raw = [[UInt8]]()
    for index in 1..<max(dids_cli_argc(), 1) {
        guard let argument = dids_cli_argument(index) else { break }
        raw.append(Array(UnsafeBufferPointer(start: UnsafeRawPointer(argument).assumingMemoryBound(to: UInt8.self),
                                             count: strlen(argument))))
    }
    let arguments = raw.map { String(decoding: $0, as: UTF8.self) }
    // One name, one key (docs/STATE.md, I5): decoding would turn every invalid byte into U+FFFD,
    // so that two different names would read and write the same ID.
    if let bad = raw.firstIndex(where: { !UTF8Validation.isValid($0) }) {
        return Output(json: Invocation.wantsJSON(arguments))
            .usageError("argument \(bad + 1) is not valid UTF-8; names, paths and options must be",
                        hint: Help.hint(Invocation.command(arguments)))
    }
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
            overrides.protection = invocation.protection
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
