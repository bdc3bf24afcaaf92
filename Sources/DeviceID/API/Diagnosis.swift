import Glibc

/// What `deviceid doctor` reports: every store, whether it answers, and what would answer.
public struct Diagnosis: Sendable {
    public struct Check: Sendable {
        public let name: String
        public let ok: Bool
        public let detail: String
    }

    public let backend: Configuration.Backend
    public let checks: [Check]
    /// Which store answers for identifiers now ("keyring+file", "file", …), or why none does.
    public let answeringStores: String
}

extension DeviceIdentity {
    /// Inspects the bus, the Secret Service and the file store without changing anything
    /// (the file store's directory is not created).
    public func diagnose() -> Diagnosis {
        var checks = [Diagnosis.Check]()
        let configuration: Configuration
        do {
            configuration = try self.configuration()
        } catch {
            return Diagnosis(backend: .auto,
                             checks: [.init(name: "configuration", ok: false, detail: error.description)],
                             answeringStores: "none")
        }
        checks.append(.init(name: "configuration", ok: true,
                            detail: "backend \(configuration.backend), timeout \(configuration.timeoutMilliseconds) ms"))
        var answering = [String]()

        if configuration.backend != .file {
            if let problem = LibSecret.sessionBusProblem() {
                checks.append(.init(name: "session bus", ok: false, detail: problem))
            } else {
                let address = Environment.value("DBUS_SESSION_BUS_ADDRESS") ?? "$XDG_RUNTIME_DIR/bus"
                checks.append(.init(name: "session bus", ok: true, detail: address))
                let keyring = SecretServiceStore(timeoutMilliseconds: configuration.timeoutMilliseconds)
                do {
                    let state = try keyring.defaultCollectionState()
                    checks.append(.init(name: "secret service", ok: true, detail: "answers"))
                    switch state {
                    case .unlocked:
                        checks.append(.init(name: "default collection", ok: true, detail: "unlocked"))
                        answering.append("keyring")
                    case .locked:
                        checks.append(.init(name: "default collection", ok: false,
                                            detail: "locked (DeviceID never prompts; unlock it by logging in)"))
                    case .missing:
                        checks.append(.init(name: "default collection", ok: false, detail: "missing"))
                    }
                } catch {
                    checks.append(.init(name: "secret service", ok: false, detail: error.description))
                }
            }
        }

        if configuration.backend != .secretService {
            do {
                let path: String
                if let chosen = configuration.storeDirectory { path = chosen } else { path = try StoreDirectory.defaultPath() }
                if let directory = try StoreDirectory(path: path, create: false) {
                    var st = stat()
                    fstat(directory.fd, &st)
                    let writable = faccessat(directory.fd, ".", W_OK, AT_EACCESS) == 0
                    checks.append(.init(name: "file store", ok: writable,
                                        detail: "\(path) (owner uid \(st.st_uid), mode \(String(st.st_mode & 0o7777, radix: 8))\(writable ? "" : ", not writable"))"))
                    if writable { answering.append("file") }
                } else {
                    checks.append(.init(name: "file store", ok: true, detail: "\(path) (not created yet)"))
                    answering.append("file")
                }
            } catch {
                checks.append(.init(name: "file store", ok: false, detail: error.description))
            }
        }
        return Diagnosis(backend: configuration.backend, checks: checks,
                         answeringStores: answering.isEmpty ? "none" : answering.joined(separator: "+"))
    }
}
