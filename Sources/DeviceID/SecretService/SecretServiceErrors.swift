extension SecretService {
    /// How far a conversation had come when an error arrived: the same error name means different
    /// things before the bus answers, before the Secret Service answers, and in a call.
    enum Phase {
        /// Reaching the session bus. An unexplained failure here means no bus: absent.
        case connecting
        /// Reaching the Secret Service on the bus. An unexplained failure means it failed to start.
        case opening
        /// A call the Secret Service answered with an error.
        case calling
    }

    /// The one error table of the Secret Service, for both transports, keyed by D-Bus error name
    /// (each transport gives the name of what it saw: a remote error's own name, or the
    /// specification's name for a local condition such as a timeout). `message` is the
    /// transport's text; it never carries secret material and is redacted besides.
    static func error(name: String?, message: String, context: String, phase: Phase) -> DeviceIDError {
        let detail: Words = "\(context): \(Redaction.redacted(message))"
        switch name {
        // No bus, or no Secret Service on it: nothing here can hold the ID (docs/STATE.md).
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner",
             "org.freedesktop.DBus.Error.NoServer", "org.freedesktop.DBus.Error.Disconnected",
             "org.freedesktop.DBus.Error.FileNotFound", "org.freedesktop.DBus.Error.Spawn.ServiceNotFound":
            return DeviceIDError.noKeyringHere(detail)
        // A Secret Service that is installed but failed to start may hold the ID.
        case "org.freedesktop.DBus.Error.Spawn.ExecFailed", "org.freedesktop.DBus.Error.Spawn.ChildExited",
             "org.freedesktop.DBus.Error.Spawn.ChildSignaled", "org.freedesktop.DBus.Error.Spawn.Failed":
            return DeviceIDError(.unavailable, detail)
        case "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Timeout",
             "org.freedesktop.DBus.Error.TimedOut":
            return DeviceIDError(.timedOut, detail)
        case "org.freedesktop.Secret.Error.IsLocked":
            return DeviceIDError(.locked, detail)
        // The service forgot the session secrets travel in (it restarted under a long-lived
        // process): a new one is opened and the conversation tried once more.
        case "org.freedesktop.Secret.Error.NoSession":
            return DeviceIDError(.keyring, "\(detail) (\(transferSessionGone))")
        // The object has no such method or interface: a service that does not implement it (the
        // Secret portal of an xdg-desktop-portal with no Secret back end). Never "none".
        case "org.freedesktop.DBus.Error.UnknownMethod", "org.freedesktop.DBus.Error.UnknownInterface",
             "org.freedesktop.DBus.Error.UnknownObject":
            return DeviceIDError(.unsupported, detail)
        case "org.freedesktop.DBus.Error.NoMemory":
            return DeviceIDError(.noMemory, detail)
        default:
            switch phase {
            case .connecting: return DeviceIDError.noKeyringHere(detail)
            case .opening: return DeviceIDError(.unavailable, detail)
            case .calling: return DeviceIDError(.keyring, detail)
            }
        }
    }

    /// A reply that does not have the shape the specification gives it: a failure of the
    /// Secret Service, never "none".
    static func malformed(_ what: String) -> DeviceIDError {
        DeviceIDError(.keyring, "the Secret Service answered with a malformed reply (\(what))")
    }

    /// The words for what the bus daemon (not the Secret Service or the portal behind it) gave
    /// malformed: its reply to GetNameOwner, this connection's unique name.
    static func malformedByBus(_ what: String) -> DeviceIDError {
        DeviceIDError(.keyring, "the session bus gave a malformed \(what)")
    }

    /// The words for a signal that cannot be watched: a path or name this process made is not
    /// valid D-Bus syntax, whichever service the signal is awaited from.
    static func unwatchable(_ path: String) -> DeviceIDError {
        DeviceIDError(.keyring, "cannot watch a signal at \(path): its path, interface, member or sender is not valid "
                      + "D-Bus syntax")
    }

    /// The words for a prompt still open at the deadline, from either transport.
    static func promptExpired(_ deadline: Deadline) -> DeviceIDError {
        DeviceIDError(.locked, "a confirmation or unlock is waiting for the user: the Secret Service's prompt "
            + "did not complete within \(deadline.session) ms"
            + (deadline.interactive ? "" : " (DeviceID shows no dialog unless interactive mode is on)"))
    }

    /// The words for a conversation that reached its deadline.
    static func deadlinePassed(_ deadline: Deadline) -> DeviceIDError {
        DeviceIDError(.timedOut, "the Secret Service did not answer within \(deadline.session) ms")
    }

    /// The words for a provider that left the bus while DeviceID waited for it (it exited or
    /// crashed mid-call): the bus answered NoReply at once, or the provider's name changed hands
    /// while a prompt was open. Not a timeout: nothing is left to wait for. What it was doing is
    /// unknown, so nothing is concluded from it (never "none").
    static func providerWentAway(_ context: String) -> DeviceIDError {
        DeviceIDError(.unavailable, "the Secret Service provider went away (\(context)): it left the bus without answering")
    }

    /// An unlocked item whose secret did not come back: not "none", but worth one new session.
    static let secretNotLoaded = "an item's secret could not be loaded"

    /// The words for a transfer session the service no longer knows: worth one new session.
    static let transferSessionGone = "the Secret Service no longer knows the transfer session"
}
