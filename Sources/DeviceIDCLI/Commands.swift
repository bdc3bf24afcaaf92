import DeviceID
import CDeviceIDLibc

/// The subcommands. Each returns the process's exit code.
struct Commands {
    let identity: DeviceIdentity
    let output: Output

    func run(_ invocation: Invocation) -> Int32 {
        let words = invocation.words
        guard let command = words.first else { return usageError("no command given", command: nil) }
        let operands = Array(words.dropFirst())
        // An empty word is a mistake of the command line (an unset shell variable, often), as a
        // missing one is: no operand of any command may be empty.
        if let empty = operands.firstIndex(of: "") {
            return usageError("\(command)'s argument \(empty + 1) is empty", command: Help.entry(command) == nil ? nil : command)
        }
        do throws(DeviceIDError) {
            switch command {
            case "get":
                guard operands.count == 1 else { return usageError("get takes one APP_ID", command: "get") }
                return try get(operands[0])
            case "reset":
                guard operands.count == 1 else { return usageError("reset takes one APP_ID", command: "reset") }
                try identity.reset(appID: operands[0])
                output.done([("app_id", Output.quote(operands[0])), ("reset", "true")])
                return ExitCode.success
            case "secret":
                return try secret(operands, allowEmpty: invocation.allowEmpty)
            case "vendor": return try vendor(operands)
            case "advertising": return try advertising(operands)
            case "openudid": return try openUDID(operands)
            case "uuid", "mac", "mac-md5":
                guard operands.isEmpty else { return usageError("\(command) takes no arguments", command: command) }
                return command == "uuid" ? try uuid(invocation) : try mac(invocation, md5: command == "mac-md5")
            case "hash": return try hash(operands, invocation)
            case "machine-id": return try machineID(operands, invocation)
            case "product-uuid": return try productUUID(operands, invocation)
            case "hardware-id": return try hardwareID(operands)
            case "attest": return try attest(operands, invocation)
            case "assert": return try assertion(operands, invocation)
            case "tpm-pin": return try tpmPin(operands)
            case "doctor":
                guard operands.isEmpty else { return usageError("doctor takes no arguments", command: "doctor") }
                return doctor()
            case "version":
                output.write(output.json ? Output.object([("version", Output.quote(Version.string.description))]) + "\n"
                                         : "deviceid \(Version.string)\n")
                return ExitCode.success
            case "help":
                return help(operands)
            default:
                return usageError("unknown command '\(command)'", command: nil)
            }
        } catch {
            return output.fail(error)
        }
    }

    /// A usage error of the command being run (its help is the hint).
    func usageError(_ message: Words, command: String?) -> Int32 {
        output.usageError(message, hint: Help.hint(command))
    }

    private func help(_ operands: [String]) -> Int32 {
        guard let topic = operands.first else {
            output.write(output.json ? Output.object([("help", Output.quote(Help.usage))]) + "\n" : Help.usage)
            return ExitCode.success
        }
        guard operands.count == 1, let entry = Help.entry(topic) else {
            return usageError("no help for '\(operands.joined(separator: " "))': not a command", command: nil)
        }
        let text = Help.text(for: entry)
        output.write(output.json ? Output.object([("command", Output.quote(topic)), ("help", Output.quote(text))]) + "\n"
                                 : text)
        return ExitCode.success
    }

    private func get(_ appID: String) throws(DeviceIDError) -> Int32 {
        printID(try identity.stableID(for: appID), [("app_id", Output.quote(appID))])
        return ExitCode.success
    }

    private func secret(_ operands: [String], allowEmpty: Bool) throws(DeviceIDError) -> Int32 {
        guard operands.count == 3, ["store", "lookup", "delete"].contains(operands[0]) else {
            return usageError("secret takes store|lookup|delete SERVICE ACCOUNT", command: "secret")
        }
        let (service, account) = (operands[1], operands[2])
        switch operands[0] {
        case "store":
            var bytes = try SecretInput.read()
            defer { SecretMemory.wipe(&bytes) }
            // An empty standard input, or a lone line break (`echo "$UNSET"`), is most often a
            // mistake upstream (an unset variable, a command that failed before the pipe): it would
            // replace the secret with nothing.
            guard !(bytes.isEmpty || bytes == [0x0a]) || allowEmpty else {
                let what = bytes.isEmpty ? "empty" : "a lone line break"
                throw DeviceIDError(.invalidArgument, "the secret read from standard input is \(what); nothing was stored "
                                        + "(--allow-empty stores it as it is)")
            }
            let location = try identity.storeSecret(bytes, service: service, account: account)
            if case .plaintextFile(let path) = location {
                output.write("deviceid: note: kept in plain text in \(path), as the file backend was chosen\n",
                             to: STDERR_FILENO)
            }
            output.done([("service", Output.quote(service)), ("account", Output.quote(account)), ("stored", "true")]
                        + Self.fields(location))
        case "lookup":
            guard case (var bytes, let location)? = try identity.lookupSecretAndLocation(service: service, account: account) else {
                throw DeviceIDError(.notFound, "no secret for service '\(service)' and account '\(account)'")
            }
            defer { SecretMemory.wipe(&bytes) }
            if case .plaintextFile(let path) = location, (try? identity.configuration().backend) != .file {
                output.write("deviceid: note: this secret is kept in plain text in \(path) (written with no keyring "
                             + "to take it, or by the file backend); to move it into the keyring, store it again where "
                             + "a keyring answers, then remove the file copy with: deviceid --backend file secret delete "
                             + "SERVICE ACCOUNT\n", to: STDERR_FILENO)
            }
            if output.json {
                let value = String(validating: bytes, as: UTF8.self).map { ("secret", Output.quote($0)) }
                    ?? ("secret_hex", Output.quote(Hex.encode(bytes)))
                output.write(Output.object([("service", Output.quote(service)), ("account", Output.quote(account)), value]
                                           + Self.fields(location)) + "\n")
            } else {
                Output.write(bytes, to: STDOUT_FILENO)
                if isatty(STDOUT_FILENO) == 1 { output.write("\n") }
            }
        default:
            guard try identity.deleteSecret(service: service, account: account) else {
                throw DeviceIDError(.notFound, "no secret for service '\(service)' and account '\(account)'")
            }
            output.done([("service", Output.quote(service)), ("account", Output.quote(account)), ("deleted", "true")])
        }
        return ExitCode.success
    }

    /// `location` (`keyring`, `sealed-file`, `plaintext-file`) and, for a file, its `path`.
    private static func fields(_ location: SecretLocation) -> [(String, String)] {
        [("location", Output.quote(location.name))] + (location.path.map { [("path", Output.quote($0))] } ?? [])
    }

    private func doctor() -> Int32 {
        let diagnosis = identity.diagnose()
        if output.json {
            let checks = diagnosis.checks.map {
                Output.object([("name", Output.quote($0.name)), ("ok", $0.ok ? "true" : "false"),
                               ("essential", $0.essential ? "true" : "false"), ("detail", Output.quote($0.detail))])
            }
            output.write(Output.object([
                ("backend", Output.quote(diagnosis.backend.description)),
                ("checks", "[" + checks.joined(separator: ",") + "]"),
                ("answering", Output.quote(diagnosis.answeringStores)), ("kept_in", Output.quote(diagnosis.keptIn)),
                ("healthy", diagnosis.healthy ? "true" : "false"),
            ] + (diagnosis.environment.map { [("environment", Self.json($0))] } ?? [])) + "\n")
        } else {
            for check in diagnosis.checks {
                output.write("\(check.ok ? "ok  " : check.essential ? "FAIL" : "note") \(check.name): \(check.detail)\n")
            }
            output.write("identifiers are kept in: \(diagnosis.keptIn)\n")
            if diagnosis.keptIn != diagnosis.answeringStores {
                output.write("answering now: \(diagnosis.answeringStores)"
                             + (diagnosis.keyringProblem.map { " (the keyring does not: \($0))" } ?? "") + "\n")
            }
        }
        return diagnosis.healthy ? ExitCode.success : ExitCode.of(DeviceIDError(.unavailable))
    }

    /// doctor's "environment" (docs/cli-json.schema.json).
    private static func json(_ environment: EnvironmentReport) -> String {
        let surroundings = environment.surroundings
        let origin = surroundings.machineID
        return Output.object([
            ("kind", Output.quote(surroundings.kind.description)),
            ("name", Output.quote(surroundings.name)),
            ("portal", Output.object([("state", Output.quote(environment.portal.description)),
                                      ("detail", Output.quote(environment.portalDetail))])),
            ("machine_id", Output.object([("weak", String(origin.weak)), ("detail", Output.quote(origin.detail))])),
            ("store", Output.object([("path", Output.quote(environment.storePath)),
                                     ("location", Output.quote(environment.storeLocation.description))])),
            ("stable_id", Output.object([
                ("location", Output.quote(environment.stableIDLocation.description)),
                ("survives_app_data_removal", String(environment.stableIDLocation.survivesAppDataRemoval)),
                ("survives_container_removal", String(environment.stableIDLocation.survivesContainerRemoval)),
            ])),
            ("protection", Output.object([("class", Output.quote(environment.protection.description)),
                                          ("binding", Output.quote(environment.binding.description)),
                                          ("detail", Output.quote(environment.bindingDetail))])),
        ])
    }
}
