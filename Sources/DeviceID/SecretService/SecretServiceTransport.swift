/// One D-Bus method call. Names are checked (`DBusSyntax`) by the transport before its client
/// library sees them.
struct MethodCall {
    var destination: String
    var path: String
    var interface: String
    var member: String
    var arguments: [DBusValue] = []
    /// What failing means, for the error's words ("cannot store the item").
    var context: String
}

/// A D-Bus client that carries the Secret Service's messages within one conversation: it only
/// moves messages. What is said, in what order, with which prompts and what the answers mean is
/// written once, in `SecretService.Conversation`. Two transports exist, equal peers:
/// `GDBusTransport` (GLib, with libsecret's encrypted transfer session) and `LibDBusTransport`
/// (libdbus, for a process forked after GLib's D-Bus ran); a fake for tests would be one more file.
/// Class-bound: Embedded Swift has existentials of class-bound protocols only.
protocol SecretServiceTransport: AnyObject {
    /// Sends `call` and waits at most `timeout` ms for its reply: the reply's arguments. An error
    /// reply or a local failure is classified by `SecretService.error(name:…)`. With
    /// `secretLimit`, each `(oayays)` in the reply arrives as `.secret`, decoded in the transfer
    /// session; one over `secretLimit` bytes is `.tooLarge` and not copied.
    func call(_ call: MethodCall, timeout: Int32, secretLimit: Int?) throws(DeviceIDError) -> [DBusValue]

    /// Sends `call` without waiting for a reply (dismissing a prompt past the deadline).
    func send(_ call: MethodCall)

    /// This process's unique name on the bus (":1.42"), which names the objects a portal makes
    /// for its requests.
    var uniqueName: String { get }

    /// Watches for the signal `member` of `interface` from `path`, runs `start`, and waits until
    /// the signal arrives (its arguments) or the monotonic clock reaches `end` ms (nil). Only a
    /// signal sent by `owner` counts: after `start`, the unique name owning it is asked
    /// (`uniqueOwner`), and a signal from any other sender is ignored. The bus name `owner` is
    /// watched too: when it changes hands (the provider exited or crashed), the signal will never
    /// come, and the wait ends at once with `gone`.
    func awaitSignal(path: String, interface: String, member: String, owner: String, end: Int,
                     gone: DeviceIDError, start: () throws(DeviceIDError) -> Void) throws(DeviceIDError) -> [DBusValue]?

    /// The object path of the session secrets travel in, opened (through `conversation`) on first use.
    func transferSession(_ conversation: SecretService.Conversation) throws(DeviceIDError) -> String

    /// Forgets the transfer session, so that the next conversation opens a new one.
    func dropTransferSession()
}

extension SecretService {
    /// Whether a NameOwnerChanged's arguments (name, old owner, new owner) say that `name`'s owner
    /// left. A name taken by one that had none is a service started by activation (the request
    /// that makes the awaited signal may start it), not one that left.
    static func ownerLeft(_ change: [DBusValue], _ name: String) -> Bool {
        change[safe: 0]?.string == name && change[safe: 1]?.string.map { !$0.isEmpty } == true
    }
}

extension SecretServiceTransport {
    /// The unique name that owns the bus name `name` now: the one sender a signal "from" its
    /// owner may have. Anyone on the bus can send a signal with any path, interface and member,
    /// even to this connection alone; only the sender, which the bus daemon writes, tells the
    /// owner's from a forgery. Asked after the request that makes the signal (which may have
    /// started the owner by activation); a name with no owner then is `gone`.
    func uniqueOwner(of name: String, until end: Int, gone: DeviceIDError) throws(DeviceIDError) -> String {
        if name.hasPrefix(":") { return name }
        let ask = MethodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                             interface: "org.freedesktop.DBus", member: "GetNameOwner", arguments: [.string(name)],
                             context: "cannot ask the bus who owns \(name)")
        let left = end - Monotonic.milliseconds()
        guard left > 0 else { throw DeviceIDError(.timedOut, "the conversation's deadline passed") }
        let reply: [DBusValue]
        do throws(DeviceIDError) {
            reply = try call(ask, timeout: Int32(clamping: left), secretLimit: nil)
        } catch where error.code != .timedOut {
            throw gone
        }
        guard let unique = reply[safe: 0]?.string, unique.hasPrefix(":"), DBusSyntax.isBusName(unique) else {
            throw SecretService.malformedByBus("reply to GetNameOwner")
        }
        return unique
    }
}
