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
    /// the signal arrives (its arguments) or the monotonic clock reaches `end` ms (nil). The bus
    /// name `owner` is watched too: when it changes hands (the provider exited or crashed), the
    /// signal will never come, and the wait ends at once with `gone`.
    func awaitSignal(path: String, interface: String, member: String, owner: String, end: Int,
                     gone: DeviceIDError, start: () throws(DeviceIDError) -> Void) throws(DeviceIDError) -> [DBusValue]?

    /// The object path of the session secrets travel in, opened (through `conversation`) on first use.
    func transferSession(_ conversation: SecretService.Conversation) throws(DeviceIDError) -> String

    /// Forgets the transfer session, so that the next conversation opens a new one.
    func dropTransferSession()
}
