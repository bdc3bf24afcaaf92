import CDeviceIDLibc

/// What `deviceid doctor` reports: every store, whether it works, and what would answer.
public struct Diagnosis: Sendable {
    public struct Check: Sendable {
        public let name: String
        public let ok: Bool
        public let detail: String
        /// A failed essential check means calls will fail, or keep IDs where they were not meant
        /// to be (`StableID.Flags.fileOnly`). A failed non-essential one is the designed fallback
        /// (no Secret Service on a server in auto mode).
        public let essential: Bool

        init(_ name: String, ok: Bool, _ detail: Words, essential: Bool = true) {
            self.name = name
            self.ok = ok
            self.detail = detail.text
            self.essential = essential
        }

        @_disfavoredOverload
        init<Detail: StringProtocol>(_ name: String, ok: Bool, _ detail: Detail, essential: Bool = true) {
            self.name = name
            self.ok = ok
            self.detail = String(detail)
            self.essential = essential
        }
    }

    public let backend: Configuration.Backend
    public var checks: [Check]
    /// Where this process runs and what survives what there; nil when the configuration is invalid.
    public var environment: EnvironmentReport?
    /// Which store answers for identifiers now ("keyring+file", "file", …), or "none".
    public let answeringStores: String
    /// Where this user's identifiers are kept, whether or not that store answers now: with the
    /// keyring locked (or without a default collection) the IDs are still in the keyring, which
    /// the file store knows (`Stores.keyringInUse`), and only the mirror answers.
    public var keptIn: String = "none"
    /// Why the keyring that keeps the IDs does not answer now, and what to do; nil when it does.
    public var keyringProblem: String?

    /// True when every essential check passed: the verdict `deviceid doctor` exits with.
    public var healthy: Bool { checks.allSatisfy { $0.ok || !$0.essential } && answeringStores != "none" }
}

extension DeviceIdentity {
    /// Checks the bus, the Secret Service (who provides it, its default collection, and a probe
    /// item created, read back and deleted there), the file store (not created if absent), the
    /// environment and the TPM (its EK certificates: which attestation can use).
    @available(*, noasync, message: "it waits for the keyring, portal or TPM: in async code use its async form, 'try await identity.nonblocking.diagnose()'")
    public func diagnose() -> Diagnosis {
        var checks = [Diagnosis.Check]()
        let configuration: Configuration
        do {
            configuration = try self.configuration()
        } catch {
            return Diagnosis(backend: .auto, checks: [.init("configuration", ok: false, error.description)],
                             answeringStores: "none")
        }
        var settings: Words = "backend \(configuration.backend), protection \(configuration.protection), "
            + "timeout \(configuration.timeoutMilliseconds) ms"
        if configuration.interactive { settings += ", interactive" }
        if configuration.backend == .auto { settings += ", mirror re-check \(configuration.mirrorRecheckSeconds) s" }
        checks.append(.init("configuration", ok: true, settings))
        var answering = [String]()
        let stores: Stores
        do {
            stores = try configuration.stores()
        } catch {
            checks.append(.init("file store", ok: false, error.description))
            return Diagnosis(backend: configuration.backend, checks: checks, answeringStores: "none")
        }
        var kept = [String]()
        var keyringProblem: String?
        if let keyring = stores.keyring {
            if diagnose(keyring, required: stores.keyringRequired, interactive: configuration.interactive, into: &checks) {
                answering.append("keyring")
                kept.append("keyring")
            } else if stores.keyringInUse() {
                kept.append("keyring")
                keyringProblem = checks.first { !$0.ok }.map { "\($0.name): \($0.detail)" }
            }
        }
        if let file = stores.file {
            let (ok, detail) = file.diagnose()
            checks.append(.init("file store", ok: ok, detail))
            if ok {
                answering.append("file")
                kept.append("file")
            }
        }
        var diagnosis = Diagnosis(backend: configuration.backend, checks: checks,
                                  answeringStores: answering.isEmpty ? "none" : answering.joined(separator: "+"))
        diagnosis.keptIn = kept.isEmpty ? "none" : kept.joined(separator: "+")
        diagnosis.keyringProblem = keyringProblem
        diagnosis.environment = try? environment()
        if let environment = diagnosis.environment {
            diagnosis.checks.append(Self.check(environment))
            // What this-device-only is bound to: essential where it is chosen and nothing can seal.
            diagnosis.checks.append(.init("protection", ok: environment.binding != .refused,
                                          "\(environment.protection), binding \(environment.binding): \(environment.bindingDetail)",
                                          essential: environment.binding == .refused))
        }
        diagnosis.checks.append(Self.tpmCheck(milliseconds: configuration.timeoutMilliseconds))
        return diagnosis
    }

    /// The TPM as one check, never essential (the stable ID needs none): who made it, its
    /// firmware, its EK certificates and how attestation would enrol, or why it cannot.
    private static func tpmCheck(milliseconds: UInt32) -> Diagnosis.Check {
        do {
            let address = try TPMAddress.resolvedWithPin()
            let (usable, words) = try TPMSurvey.of(address, milliseconds: milliseconds).words(at: address)
            let pin = TPMPins.words(address, held: address.pin?.name)
            return .init("tpm", ok: usable, words + "; " + pin, essential: false)
        } catch {
            return .init("tpm", ok: false, error.detail + "; hardware-id and attest cannot work", essential: false)
        }
    }

    /// The environment as one check: a sandbox whose portal fails cannot mint its stable ID (an
    /// error, essential); one without a portal keeps it only with the app's data, a container's
    /// writable layer only with the container (notes).
    private static func check(_ environment: EnvironmentReport) -> Diagnosis.Check {
        let surroundings = environment.surroundings
        var words: Words = surroundings.kind == .host ? "host" : "\(surroundings.kind) \(surroundings.name)"
        words += "; the stable ID lives in \(environment.stableIDLocation)"
        if !environment.stableIDLocation.survivesAppDataRemoval { words += " (removed with the app's data)" }
        if !environment.stableIDLocation.survivesContainerRemoval { words += " (removed with the container)" }
        if surroundings.machineID.weak { words += "; machine ID weak: \(surroundings.machineID.detail)" }
        if environment.portal != .notAsked { words += "; Secret portal: \(environment.portal) (\(environment.portalDetail))" }
        if !environment.stableIDLocation.survivesContainerRemoval {
            words += "; mount a volume at \(environment.storePath) to keep IDs past the container (docs/ENVIRONMENTS.md \"Containers\")"
        }
        let ok = environment.portal != .failed && environment.stableIDLocation.survivesAppDataRemoval
            && environment.stableIDLocation.survivesContainerRemoval
        return .init("environment", ok: ok, words, essential: environment.portal == .failed)
    }

    /// Appends the keyring's checks; true when it can keep identifiers now.
    private func diagnose(_ keyring: SecretServiceStore, required: Bool, interactive: Bool,
                          into checks: inout [Diagnosis.Check]) -> Bool {
        if let problem = SecretServiceStore.sessionBusProblem() {
            checks.append(.init("session bus", ok: false, problem, essential: required))
            return false
        }
        let address = Environment.value("DBUS_SESSION_BUS_ADDRESS") ?? "$XDG_RUNTIME_DIR/bus"
        checks.append(.init("session bus", ok: true, address))
        let key = StoreKey.identifier(scope: "doctor", name: "probe")
        let value = Array("deviceid doctor probe \((try? ID128.random())?.uuidString ?? "")".utf8)
        let probe: SecretServiceStore.Probe
        do {
            probe = try keyring.probe(key, value: value)
        } catch {
            // Unreachable is the designed fallback in auto mode; anything else is a real fault.
            checks.append(.init("secret service", ok: false, error.description,
                                essential: required || error.code != .unavailable))
            return false
        }
        checks.append(.init("secret service", ok: true, "provided by \(probe.provider)"))
        switch probe.collection {
        case .unlocked:
            checks.append(.init("default collection", ok: true, "unlocked"))
        case .locked:
            checks.append(.init("default collection", ok: false,
                                "locked: " + KeyringRemedy.locked(probe.provider, interactive: interactive)))
        case .missing:
            checks.append(.init("default collection", ok: false,
                                "missing: no keyring, database or wallet is open and set as default: "
                                    + KeyringRemedy.noCollection(probe.provider)))
        }
        if let failure = probe.roundTrip {
            checks.append(.init("keyring round trip", ok: false, "cannot create, read and delete an item: \(failure)"))
            return false
        }
        checks.append(.init("keyring round trip", ok: true, "created, read back and deleted a probe item"))
        return true
    }
}
