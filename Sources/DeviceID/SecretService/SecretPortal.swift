/// The Secret portal (`org.freedesktop.portal.Secret` of xdg-desktop-portal): how a sandboxed app
/// (Flatpak, Snap) reaches the one secret the host keeps for it. `RetrieveSecret` writes the
/// app's master secret — 64 bytes that gnome-keyring creates once per app id and keeps in the
/// user's login collection on the host — to a descriptor the caller passes. The portal learns the
/// app id from the caller's `/.flatpak-info`, so an app can read only its own secret, and the
/// secret outlives `flatpak uninstall --delete-data` (docs/ENVIRONMENTS.md "Sandboxes and
/// containers"). libsecret's file backend keys its keyring with the same secret.
///
/// What the answer means (docs/STATE.md, "How each store answers"): only "no portal on the bus"
/// and "a portal without the Secret interface" are a positive "none". A back end that is
/// configured but fails, a timeout, an empty or malformed answer may still hold the app's secret:
/// errors, never "none".
enum SecretPortal {
    static let busName = "org.freedesktop.portal.Desktop"
    static let path = "/org/freedesktop/portal/desktop"
    static let interface = "org.freedesktop.portal.Secret"
    /// The size of the secret: gnome-keyring writes 64 bytes, and libsecret — whose file backend
    /// keys on the same secret — reads exactly 64 and refuses any other size, so every back end
    /// that works with it writes 64.
    static let secretSize = 64

    enum Answer<Derived> {
        /// What `derive` made of the app's secret.
        case secret(Derived)
        /// Positively none: why (no session bus, no portal, a portal without a Secret back end).
        case absent(String)
    }

    /// Asks the portal for this app's secret, within `timeoutMilliseconds`, and hands it to
    /// `derive`, which must not keep it: the one copy is wiped as soon as `derive` returns.
    static func retrieve<Derived>(timeoutMilliseconds: UInt32,
                                  derive: ([UInt8]) -> Derived) throws(DeviceIDError) -> Answer<Derived> {
        let address: String
        switch SessionBus.address() {
        case .success(let found): address = found
        case .failure(let error):
            guard error.keyringAbsent else { throw error }
            return .absent(error.detail)
        }
        let deadline = SecretService.Deadline(milliseconds: timeoutMilliseconds, promptMilliseconds: nil)
        let end = Monotonic.milliseconds() + Int(timeoutMilliseconds)
        let reader: FileDescriptor
        var writer: FileDescriptor?
        switch FileDescriptor.pipe() {
        case .success(let pair): (reader, writer) = pair
        case .failure(let errno): throw errno.error("cannot make a pipe for", "the Secret portal's answer")
        }
        if let absent = try ask(writer!, deadline, address: address, end: end) { return .absent(absent) }
        writer = nil
        var secret = try readAnswer(reader, until: end, timeoutMilliseconds)
        defer { wipe(&secret) }
        return .secret(derive(secret))
    }

    /// Sends RetrieveSecret with `writer` (the transport sends a duplicate; the caller then closes
    /// its own: the answer ends when the last copy of the write end — the portal's, its back
    /// end's, ours — is closed). nil, or why the answer is a positive "none".
    private static func ask(_ writer: FileDescriptor, _ deadline: SecretService.Deadline, address: String,
                            end: Int) throws(DeviceIDError) -> String? {
        let call = MethodCall(destination: busName, path: path, interface: interface, member: "RetrieveSecret",
                              arguments: [.unixFD(writer.rawValue), .dictionary(key: "s", value: "v", [])],
                              context: "cannot ask the Secret portal for this app's secret")
        do throws(DeviceIDError) {
            let reply = try withExtendedLifetime(writer) { () throws(DeviceIDError) -> [DBusValue] in
                try SecretService.overTransport(deadline, address: address, end: end) {
                    (transport) throws(DeviceIDError) -> [DBusValue] in
                    try transport.call(call, timeout: Int32(clamping: max(end - Monotonic.milliseconds(), 1)),
                                       secretLimit: nil)
                }
            }
            guard reply.count == 1, reply[0].objectPath != nil else {
                throw DeviceIDError(.keyring, "the Secret portal answered with a malformed reply (RetrieveSecret)")
            }
            return nil
        } catch where error.code == .unavailable && error.keyringAbsent {
            return ("no Secret portal on the session bus (\(busName)): \(error.detail)")
        } catch where error.code == .unsupported {
            return ("the portal has no Secret back end (\(interface)): \(error.detail)")
        } catch where error.code == .timedOut {
            throw DeviceIDError(.timedOut, "the Secret portal did not answer within \(deadline.milliseconds) ms")
        }
    }

    /// Reads the secret: its 64 bytes, or the pipe's end, within the deadline. Not the end
    /// alone, as a first version did: once in a suite run a process waited its whole 5 s for the
    /// end; libsecret too reads 64 bytes after the portal's Response and never waits for the end.
    private static func readAnswer(_ reader: FileDescriptor, until end: Int,
                                   _ timeoutMilliseconds: UInt32) throws(DeviceIDError) -> [UInt8] {
        var secret = [UInt8]()
        // Room for all of it at once: appending never moves a part of the secret and leaves it behind.
        secret.reserveCapacity(secretSize)
        var chunk = [UInt8](repeating: 0, count: secretSize)
        defer { wipe(&chunk) }
        while secret.count < secretSize {
            switch reader.awaitReadable(until: end) {
            case .success(true): break
            case .success(false):
                let count = secret.count
                wipe(&secret)
                throw DeviceIDError(.timedOut, "the Secret portal's back end did not finish its answer within "
                                    + "\(timeoutMilliseconds) ms (\(count) of \(secretSize) bytes)")
            case .failure(let errno):
                wipe(&secret)
                throw errno.error("cannot wait for", "the Secret portal's answer")
            }
            let count: Int
            switch chunk.withUnsafeMutableBytes({ reader.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<(secretSize - secret.count)])) }) {
            case .success(let n): count = n
            case .failure(let errno):
                wipe(&secret)
                throw errno.error("cannot read", "the Secret portal's answer")
            }
            if count == 0 { break }
            secret += chunk[0..<count]
        }
        guard secret.count == secretSize else {
            let count = secret.count
            wipe(&secret)
            // An empty answer is what a back end that failed leaves (Response 2): not "none", as
            // a locked keyring on the host leaves the same.
            throw DeviceIDError(.keyring, "the Secret portal's back end gave no secret (\(count) bytes): is the "
                                + "keyring on the host locked, or its portal back end not running?")
        }
        return secret
    }
}
