/// The Secret Service (org.freedesktop.secrets: GNOME Keyring, KWallet, KeePassXC), as DeviceID
/// talks to it: this folder owns the deadline, the collection state, the choice of transport,
/// the error table, the prompt policy and their words. The transports only move messages.
///
/// Rules learned on real gnome-keyring, KeePassXC and KWallet (docs/ENVIRONMENTS.md "Backends"):
/// - the lock state of the default collection is asked first, and a path that could show an
///   unlock dialog is started only in interactive mode, or where the provider says no dialog
///   will appear (`Conversation.usableDefaultCollection`): KeePassXC's search on a locked
///   database waits for an unlock dialog, and gnome-keyring's unlock prompt blocks forever;
/// - prompts are run, not refused (KeePassXC confirms every create and delete with a prompt that
///   completes at once) and dismissed at the deadline where that is safe (`Prompts.swift`);
/// - never autolaunch a bus; never let a client library `exit()` the caller's process;
/// - every conversation is bounded by one deadline, connection and registration included.
enum SecretService {
    /// How an item's value crosses the bus in a conversation (the Secret Service's transfer
    /// session). The bus itself is per user: only this user and root can see its messages, and
    /// both could as well ask the Secret Service for the value.
    enum Transfer: Sendable {
        /// "plain": the value as it is. DeviceID's identifier records: what they hold is handed to
        /// the app, which may send it anywhere, and anyone who can see this bus can ask for it.
        /// Needs neither libsecret nor a Diffie-Hellman exchange (about 7 ms of the first answer).
        case plain
        /// "dh-ietf1024-sha256-aes128-cbc-pkcs7", through libsecret, which keeps the value in
        /// non-pageable memory: a caller's secret (`secret store`), which then never appears in
        /// the clear in a bus message, a bus monitor's log or the bus daemon's buffers. Where
        /// libsecret cannot be loaded, or in a process forked after GLib's D-Bus ran (libdbus
        /// carries the conversation), "plain" (docs/ENVIRONMENTS.md "Loaded on first use").
        case encrypted
    }

    enum CollectionState: Equatable {
        case unlocked, locked, missing
    }

    /// How long one conversation may take.
    struct Deadline: Sendable, Equatable {
        /// The bound of each D-Bus call, and of the whole conversation when not interactive.
        var milliseconds: UInt32
        /// Interactive mode: how long a prompt may wait for the person, who may be shown unlock
        /// and confirmation dialogs. nil: no dialog is ever started.
        var promptMilliseconds: UInt32?

        var interactive: Bool { promptMilliseconds != nil }
        var session: UInt32 { promptMilliseconds ?? milliseconds }
    }

    /// Runs `body` against the Secret Service with one deadline for all of it. GLib carries the
    /// conversation unless this process was forked from one where GLib's D-Bus already ran,
    /// which GLib cannot serve (`GDBusTransport.usableHere`); there libdbus does.
    static func session<T>(
        _ deadline: Deadline, transfer: Transfer, _ body: (Conversation) throws(DeviceIDError) -> T
    ) throws(DeviceIDError) -> T {
        let address = try SessionBus.address().get()
        let serviceName = try SessionBus.serviceName()
        let end = Monotonic.milliseconds() + Int(deadline.session)
        let converse = { (transport: any SecretServiceTransport) throws(DeviceIDError) -> T in
            var attempt = 0
            while true {
                do throws(DeviceIDError) {
                    return try body(Conversation(transport, busName: serviceName, deadline: deadline, end: end,
                                                 transfer: transfer))
                } catch where attempt == 0 && transferSessionWasRefused(error) {
                    // KWallet refuses a Diffie-Hellman public key whose leading byte is zero, which
                    // libsecret sends one byte short (secretstorage issue #48): OpenSession fails,
                    // GetSecrets answers without the item, or a later call says "Can't find session"
                    // (measured: about 1 process in 100). A service restarted under a long-lived
                    // process answers NoSession. All come before any item is changed: a new
                    // transfer session, with a new key, is safe.
                    attempt += 1
                    transport.dropTransferSession()
                }
            }
        }
        do throws(DeviceIDError) {
            return try overTransport(deadline, address: address, end: end, converse)
        } catch where error.code == .timedOut && Monotonic.milliseconds() >= end {
            throw deadlinePassed(deadline)
        }
    }

    /// Runs `body` over the session bus at `address` until `end`: GLib carries it unless this
    /// process was forked from one where GLib's D-Bus already ran (`GDBusTransport.usableHere`);
    /// there libdbus does. Also what the Secret portal is asked through (`SecretPortal`).
    static func overTransport<T>(
        _ deadline: Deadline, address: String, end: Int, _ body: (any SecretServiceTransport) throws(DeviceIDError) -> T
    ) throws(DeviceIDError) -> T {
        if try GDBusTransport.usableHere() {
            return try GDBusTransport.conversation(deadline: deadline, end: end, body)
        }
        return try LibDBusTransport.conversation(address: address, end: end, body)
    }

    private static func transferSessionWasRefused(_ error: DeviceIDError) -> Bool {
        error.code == .keyring && (error.detail.includes("public key size is invalid")
            || error.detail.includes("Can't find session") || error.detail.includes(secretNotLoaded)
            || error.detail.includes(transferSessionGone))
    }
}
