import DeviceID
import CDeviceIDLibc

/// The subcommands. Each returns the process's exit code.
struct Commands {
    let identity: DeviceIdentity
    let output: Output

    static let usage = """
        usage: deviceid [OPTIONS] COMMAND [ARGS]

        commands:
          get APP_ID                       print this device's stable ID for APP_ID
          reset APP_ID                     forget it; the next get mints a new one
          secret store SERVICE ACCOUNT     store the secret read from standard input
          secret lookup SERVICE ACCOUNT    write the secret to standard output
          secret delete SERVICE ACCOUNT    delete the secret
          vendor get|reset VENDOR_ID       identifierForVendor: one ID per vendor
          advertising [get|reset]          the advertising ID (zeros while tracking is limited)
          advertising limit [on|off]       show or set "limit ad tracking"
          openudid get APP_ID              the ID every app of this user shares
          openudid opt-out APP_ID on|off   opt an app out of (or back into) OpenUDID
          openudid reset                   forget the shared ID
          uuid                             a random UUID v4 (--uppercase, --compact)
          mac                              the primary hardware address (--interface, --compact)
          mac-md5                          MD5 of the MAC's 12 hex digits (--interface, --bundle ID)
          hash md5|sha256                  hex digest of stdin; with --bundle ID, of stdin + ID
          machine-id app-specific APP_ID   systemd's app-specific machine ID (--compact: its form)
          machine-id raw                   the RAW machine ID (not for sending anywhere)
          product-uuid raw                 the RAW firmware product UUID (usually root only)
          doctor                           check the bus, the keyring and the file store
          version                          print the version
          help                             print this text

        options:
          --backend auto|secret-service|file   (default: $DEVICEID_BACKEND, else auto)
          --timeout MS                          deadline for each keyring conversation
          --store-dir DIR                       file store directory (absolute)
          --interactive[=MS]                    let the keyring ask to unlock or confirm, waiting
                                                up to MS (default 120000) for the person
          --json                                machine-readable output and errors
          --interface IF, --bundle ID, --uppercase, --compact   for the techniques above

        exit status: 0 success, 1 not found, 2 usage, 10+|status| for other failures
        (14 locked, 15 unavailable, 16 timed out, 17 corrupt, 19 permission; see README).

        """

    func run(_ invocation: Invocation) -> Int32 {
        let words = invocation.words
        guard let command = words.first else { return usageError("no command given") }
        let operands = Array(words.dropFirst())
        do throws(DeviceIDError) {
            switch command {
            case "get":
                guard operands.count == 1 else { return usageError("get takes one APP_ID") }
                return try get(operands[0])
            case "reset":
                guard operands.count == 1 else { return usageError("reset takes one APP_ID") }
                try identity.reset(appID: operands[0])
                if output.json { output.write(Output.object([("app_id", Output.quote(operands[0])), ("reset", "true")]) + "\n") }
                return ExitCode.success
            case "secret":
                return try secret(operands)
            case "vendor": return try vendor(operands)
            case "advertising": return try advertising(operands)
            case "openudid": return try openUDID(operands)
            case "uuid", "mac", "mac-md5":
                guard operands.isEmpty else { return usageError("\(command) takes no arguments") }
                return command == "uuid" ? try uuid(invocation) : try mac(invocation, md5: command == "mac-md5")
            case "hash": return try hash(operands, invocation)
            case "machine-id": return try machineID(operands, invocation)
            case "product-uuid": return try productUUID(operands, invocation)
            case "doctor":
                guard operands.isEmpty else { return usageError("doctor takes no arguments") }
                return doctor()
            case "version":
                output.write(output.json ? Output.object([("version", Output.quote(Version.string.description))]) + "\n"
                                         : "deviceid \(Version.string)\n")
                return ExitCode.success
            case "help":
                output.write(Self.usage)
                return ExitCode.success
            default:
                return usageError("unknown command '\(command)'")
            }
        } catch {
            return output.fail(error)
        }
    }

    func usageError(_ message: String) -> Int32 {
        output.write("deviceid: \(message)\n\n\(Self.usage)", to: STDERR_FILENO)
        return ExitCode.usage
    }

    private func get(_ appID: String) throws(DeviceIDError) -> Int32 {
        printID(try identity.stableID(for: appID), [("app_id", Output.quote(appID))])
        return ExitCode.success
    }

    private func secret(_ operands: [String]) throws(DeviceIDError) -> Int32 {
        guard operands.count == 3, ["store", "lookup", "delete"].contains(operands[0]) else {
            return usageError("secret takes store|lookup|delete SERVICE ACCOUNT")
        }
        let (service, account) = (operands[1], operands[2])
        switch operands[0] {
        case "store":
            var bytes = try SecretInput.read()
            defer { SecretMemory.wipe(&bytes) }
            try identity.storeSecret(bytes, service: service, account: account)
        case "lookup":
            guard var bytes = try identity.lookupSecret(service: service, account: account) else {
                throw DeviceIDError(.notFound, "no secret for service '\(service)' and account '\(account)'")
            }
            defer { SecretMemory.wipe(&bytes) }
            if output.json {
                let value = String(validating: bytes, as: UTF8.self).map { ("secret", Output.quote($0)) }
                    ?? ("secret_hex", Output.quote(Hex.encode(bytes)))
                output.write(Output.object([("service", Output.quote(service)), ("account", Output.quote(account)), value]) + "\n")
            } else {
                Output.write(bytes, to: STDOUT_FILENO)
                if isatty(STDOUT_FILENO) == 1 { output.write("\n") }
            }
        default:
            guard try identity.deleteSecret(service: service, account: account) else {
                throw DeviceIDError(.notFound, "no secret for service '\(service)' and account '\(account)'")
            }
        }
        return ExitCode.success
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
                ("answering", Output.quote(diagnosis.answeringStores)),
                ("healthy", diagnosis.healthy ? "true" : "false"),
            ]) + "\n")
        } else {
            for check in diagnosis.checks {
                output.write("\(check.ok ? "ok  " : check.essential ? "FAIL" : "note") \(check.name): \(check.detail)\n")
            }
            output.write("identifiers are kept in: \(diagnosis.answeringStores)\n")
        }
        return diagnosis.healthy ? ExitCode.success : ExitCode.of(DeviceIDError(.unavailable))
    }
}
