import DeviceID
import CDeviceIDLibc

/// The identifier techniques beyond the per-app ID: vendor, advertising, OpenUDID, UUIDs, MAC,
/// digests and the machine ID.
extension Commands {
    func printID(_ id: StableID, _ pairs: [(String, String)] = []) {
        if output.json {
            output.write(Output.object(pairs + [
                ("id", Output.quote(id.uuidString)), ("source", Output.quote(id.source.description)),
                ("device_changed", String(id.deviceChanged)), ("weak", String(id.isWeak)),
                ("limited", String(id.flags.contains(.limited))),
                ("file_only", String(id.flags.contains(.fileOnly))),
                ("repaired", String(id.flags.contains(.repaired))),
                ("mirrored", String(id.flags.contains(.mirrored))),
                ("provisional", String(id.isProvisional)),
                ("app_data_only", String(id.flags.contains(.appDataOnly))),
                ("anchor_changed", String(id.flags.contains(.anchorChanged))),
                ("location", Output.quote(id.location.description)),
            ] + (id.keyringFailure.map { [("keyring_error", Output.quote($0.description))] } ?? [])) + "\n")
        } else {
            output.write(id.uuidString + "\n")
            if id.deviceChanged {
                output.write("deviceid: note: this ID was stored on another machine (clone or restored backup); "
                             + "`reset` re-mints it\n", to: STDERR_FILENO)
            }
        }
        // Said on stderr in both forms: a script reading stdout still gets the ID.
        if id.flags.contains(.repaired) {
            output.write("deviceid: note: a corrupt copy of this ID in one store was replaced with the other store's\n",
                         to: STDERR_FILENO)
        }
        if id.flags.contains(.appDataOnly) {
            output.write("deviceid: note: kept only in this sandboxed app's own data: removing the app's data "
                         + "removes it\n", to: STDERR_FILENO)
        }
        if let failure = id.keyringFailure {
            output.write("deviceid: note: kept only in the file store; the keyring will be tried again: \(failure)\n",
                         to: STDERR_FILENO)
        }
    }

    func printValue(_ key: String, _ value: String, _ extra: [(String, String)] = []) {
        output.write(output.json ? Output.object([(key, Output.quote(value))] + extra) + "\n" : value + "\n")
    }

    func vendor(_ operands: [String]) throws(DeviceIDError) -> Int32 {
        switch (operands.first, operands.count) {
        case ("get"?, 2): printID(try identity.vendorID(for: operands[1]), [("vendor_id", Output.quote(operands[1]))])
        case ("reset"?, 2):
            try identity.resetVendorID(for: operands[1])
            output.done([("vendor_id", Output.quote(operands[1])), ("reset", "true")])
        default: return usageError("vendor takes get|reset VENDOR_ID", command: "vendor")
        }
        return ExitCode.success
    }

    func advertising(_ operands: [String]) throws(DeviceIDError) -> Int32 {
        switch (operands.first, operands.count) {
        case ("get"?, 1), (nil, 0): printID(try identity.advertisingID())
        case ("reset"?, 1):
            try identity.resetAdvertisingID()
            output.done([("reset", "true")])
        case ("limit"?, 2) where ["on", "off"].contains(operands[1]):
            try identity.setAdvertisingTrackingLimited(operands[1] == "on")
            output.done([("limited", String(operands[1] == "on"))])
        case ("limit"?, 1):
            let limited = try identity.isAdvertisingTrackingLimited()
            output.write(output.json ? Output.object([("limited", String(limited))]) + "\n" : (limited ? "on\n" : "off\n"))
        default: return usageError("advertising takes get | reset | limit [on|off]", command: "advertising")
        }
        return ExitCode.success
    }

    func openUDID(_ operands: [String]) throws(DeviceIDError) -> Int32 {
        switch (operands.first, operands.count) {
        case ("get"?, 2): printID(try identity.openUDID(for: operands[1]), [("app_id", Output.quote(operands[1]))])
        case ("opt-out"?, 3) where ["on", "off"].contains(operands[2]):
            try identity.setOpenUDIDOptOut(operands[2] == "on", for: operands[1])
            output.done([("app_id", Output.quote(operands[1])), ("opted_out", String(operands[2] == "on"))])
        case ("reset"?, 1):
            try identity.resetOpenUDID()
            output.done([("reset", "true")])
        default: return usageError("openudid takes get APP_ID | opt-out APP_ID on|off | reset", command: "openudid")
        }
        return ExitCode.success
    }

    func uuid(_ invocation: Invocation) throws(DeviceIDError) -> Int32 {
        printValue("uuid", try ID128.random().format(uppercase: invocation.uppercase, dashes: !invocation.compact))
        return ExitCode.success
    }

    func mac(_ invocation: Invocation, md5: Bool) throws(DeviceIDError) -> Int32 {
        let address = try NetworkInterfaces.primaryAddress(interface: invocation.interface)
        let facts: [(String, String)] = [
            ("interface", Output.quote(address.interface)), ("permanent", String(address.isPermanent)),
            ("weak", String(address.isWeak)),
        ]
        if md5 {
            printValue("md5", try Digests.macMD5(address, bundleID: invocation.bundleID),
                       [("mac", Output.quote(address.text(compact: true)))] + facts)
        } else {
            printValue("mac", address.text(compact: invocation.compact), facts)
        }
        if address.isWeak && !output.json {
            output.write("deviceid: note: \(address.interface)'s address is locally administered: a weak identifier\n",
                         to: STDERR_FILENO)
        }
        return ExitCode.success
    }

    func hash(_ operands: [String], _ invocation: Invocation) throws(DeviceIDError) -> Int32 {
        guard operands.count == 1, let algorithm = ["md5": Digests.Algorithm.md5, "sha256": .sha256][operands[0]] else {
            return usageError("hash takes md5|sha256 (the data comes from standard input)", command: "hash")
        }
        let data = try SecretInput.read()
        let digest: String
        if let bundle = invocation.bundleID {
            digest = try Digests.tokenHash(data, bundleID: bundle, algorithm)
        } else {
            digest = try Digests.hex(algorithm, data)
        }
        printValue(operands[0], digest)
        return ExitCode.success
    }

    func machineID(_ operands: [String], _ invocation: Invocation) throws(DeviceIDError) -> Int32 {
        let id: ID128
        switch (operands.first, operands.count) {
        case ("app-specific"?, 2): id = try MachineID.appSpecific(try MachineID.appID(from: operands[1]))
        case ("raw"?, 1): id = try MachineID.raw()
        default: return usageError("machine-id takes app-specific APP_ID | raw", command: "machine-id")
        }
        // Weak where the machine ID is not this machine's own (a container's, baked into its image).
        let origin = Surroundings.current().machineID
        printValue("id", id.format(uppercase: invocation.uppercase, dashes: !invocation.compact),
                   [("weak", String(origin.weak))] + (origin.weak ? [("weak_reason", Output.quote(origin.detail))] : []))
        if origin.weak && !output.json {
            output.write("deviceid: note: weak: \(origin.detail)\n", to: STDERR_FILENO)
        }
        return ExitCode.success
    }

    func productUUID(_ operands: [String], _ invocation: Invocation) throws(DeviceIDError) -> Int32 {
        guard operands == ["raw"] else { return usageError("product-uuid takes raw", command: "product-uuid") }
        printValue("id", try ProductUUID.raw().format(uppercase: invocation.uppercase, dashes: !invocation.compact))
        return ExitCode.success
    }
}
