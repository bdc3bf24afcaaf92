/// The Secret portal (`org.freedesktop.portal.Secret` of xdg-desktop-portal): how a sandboxed app
/// (Flatpak, Snap) reaches the one secret the host keeps for it. `RetrieveSecret` writes the
/// app's master secret — 64 bytes that gnome-keyring creates once per app id and keeps in the
/// user's login collection on the host — to a descriptor the caller passes. The portal learns the
/// app id from the caller's `/.flatpak-info`, so an app can read only its own secret, and the
/// secret outlives `flatpak uninstall --delete-data` (docs/ENVIRONMENTS.md "Sandboxes and
/// containers"). libsecret's file backend keys its keyring with the same secret.
///
/// The conversation, as libsecret holds it (and xdg-desktop-portal documents for every request):
/// `Request.Response` is watched on the request's path before `RetrieveSecret` is sent (its path
/// comes from our unique name and the `handle_token`), the secret is used only after
/// `Response` 0, and it is exactly 64 bytes. All of it within one deadline: the pipe is read only
/// as far as `poll` says it holds bytes.
///
/// Waiting for `Response` is not only correctness: a client that leaves after reading the bytes
/// and before `Response` makes xdg-desktop-portal close the back end's request, and gnome-keyring
/// (42.1 to its main branch) then fails every later request of every app, leaving their pipes
/// open, until it restarts (docs/ENVIRONMENTS.md "The Secret portal"). The portal is never asked
/// to Close a request for the same reason.
///
/// What the answer means (docs/STATE.md, "How each store answers"): only "no portal on the bus"
/// and "a portal without the Secret interface" are a positive "none". A back end that is
/// configured but fails, a timeout, an empty or malformed answer may still hold the app's secret:
/// errors, never "none".
enum SecretPortal {
    static let busName = "org.freedesktop.portal.Desktop"
    static let path = "/org/freedesktop/portal/desktop"
    static let interface = "org.freedesktop.portal.Secret"
    static let requestInterface = "org.freedesktop.portal.Request"
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
        let token = "deviceid" + hex(try SystemRandom.bytes(8))
        let outcome: Outcome
        do throws(DeviceIDError) {
            outcome = try SecretService.overTransport(deadline, address: address, end: end) {
                (transport) throws(DeviceIDError) -> Outcome in
                try ask(transport, sending: &writer, token: token, end: end)
            }
        } catch where error.code == .unavailable && error.keyringAbsent {
            return .absent("no Secret portal on the session bus (\(busName)): \(error.detail)")
        } catch where error.code == .unsupported {
            return .absent("the portal has no Secret back end (\(interface)): \(error.detail)")
        } catch where error.code == .timedOut {
            throw timedOut(timeoutMilliseconds, "did not answer")
        }
        switch outcome {
        case .noResponse:
            throw timedOut(timeoutMilliseconds, "did not answer")
        case .response(0):
            var secret = try readSecret(reader, until: end, timeoutMilliseconds)
            defer { wipe(&secret) }
            return .secret(derive(secret))
        case .response(1):
            throw DeviceIDError(.keyring, "the Secret portal cancelled the request (Response 1)")
        case .response(2):
            // What gnome-keyring's back end answers when its keyring is locked, when it is not
            // running, and, until it restarts, after any request was closed (ENVIRONMENTS.md).
            throw DeviceIDError(.keyring, "the Secret portal's back end failed (Response 2): is the keyring on "
                                + "the host locked, or its back end not running? (gnome-keyring's fails every "
                                + "request after one was cancelled, until it restarts)")
        case .response(let code):
            throw DeviceIDError(.keyring, "the Secret portal answered with an unknown response code \(code)")
        }
    }

    private enum Outcome {
        case response(UInt32)
        case noResponse
    }

    /// Sends RetrieveSecret with the write end (the transport sends a duplicate; ours is closed as
    /// soon as it is sent: the answer ends when the last copy — the portal's, its back end's — is
    /// closed) and waits for the request's Response until `end`.
    private static func ask(_ transport: any SecretServiceTransport, sending writer: inout FileDescriptor?,
                            token: String, end: Int) throws(DeviceIDError) -> Outcome {
        let handle = requestPath(uniqueName: transport.uniqueName, token: token)
        guard DBusSyntax.isObjectPath(handle) else {
            throw SecretService.malformedByBus("unique name for this process (it makes no request path)")
        }
        let call = MethodCall(destination: busName, path: path, interface: interface, member: "RetrieveSecret",
                              arguments: [.unixFD(writer!.rawValue),
                                          .dictionary(key: "s", value: "v", [(.string("handle_token"), .variant(.string(token)))])],
                              context: "cannot ask the Secret portal for this app's secret")
        let gone = DeviceIDError(.unavailable, "the Secret portal left the bus before it answered")
        let arguments = try transport.awaitSignal(path: handle, interface: requestInterface, member: "Response",
                                                  owner: busName, end: end, gone: gone) { () throws(DeviceIDError) in
            let reply = try transport.call(call, timeout: Int32(clamping: max(end - Monotonic.milliseconds(), 1)),
                                           secretLimit: nil)
            writer = nil
            guard reply.count == 1, let answered = reply[0].objectPath else {
                throw DeviceIDError(.keyring, "the Secret portal answered RetrieveSecret with a reply of the wrong type")
            }
            // Every portal since 0.9 names the request by the handle_token; one that does not
            // would send its Response where nobody watches.
            guard answered == handle else {
                throw DeviceIDError(.keyring, "the Secret portal made its request at \(answered), not at \(handle)")
            }
        }
        guard let arguments else { return .noResponse }
        guard arguments.count == 2, let code = arguments[0].uint32 else {
            throw DeviceIDError(.keyring, "the Secret portal's Response has the wrong type")
        }
        return .response(code)
    }

    /// Where the portal makes the request object: "/org/freedesktop/portal/desktop/request/" +
    /// the unique name without its ':' and with '_' for '.', + "/" + the token.
    static func requestPath(uniqueName: String, token: String) -> String {
        let sender = String(uniqueName.drop { $0 == ":" }.map { $0 == "." ? "_" : $0 })
        return "/org/freedesktop/portal/desktop/request/\(sender)/\(token)"
    }

    /// Reads the secret after Response 0: exactly 64 bytes, each read only what `poll` says is
    /// there, all within the deadline. More than 64 bytes is refused, as libsecret refuses any
    /// other size: a secret cut short is another secret.
    private static func readSecret(_ reader: FileDescriptor, until end: Int,
                                   _ timeoutMilliseconds: UInt32) throws(DeviceIDError) -> [UInt8] {
        var secret = [UInt8]()
        // Room for all of it at once: appending never moves a part of the secret and leaves it behind.
        secret.reserveCapacity(secretSize + 1)
        var chunk = [UInt8](repeating: 0, count: secretSize + 1)
        defer { wipe(&chunk) }
        var ended = false
        // Until 64 bytes (or the end) have come; then once more without waiting, for a 65th.
        while !ended {
            // awaitReadable(until:) with a time already past asks nothing: the 65th byte is
            // looked for with a poll that does not wait (`Monotonic` + 1 ms, at most).
            let waitUntil = secret.count < secretSize ? end : Monotonic.milliseconds() + 1
            switch reader.awaitReadable(until: waitUntil) {
            case .success(true): break
            case .success(false):
                if secret.count == secretSize { return secret }
                let count = secret.count
                wipe(&secret)
                throw DeviceIDError(.timedOut, "the Secret portal's back end did not finish its answer within "
                                    + "\(timeoutMilliseconds) ms (\(count) of \(secretSize) bytes)")
            case .failure(let errno):
                wipe(&secret)
                throw errno.error("cannot wait for", "the Secret portal's answer")
            }
            let room = secretSize + 1 - secret.count
            switch chunk.withUnsafeMutableBytes({ reader.readSome(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<room])) }) {
            case .success(0): ended = true
            case .success(let n): secret += chunk[0..<n]
            case .failure(let errno):
                wipe(&secret)
                throw errno.error("cannot read", "the Secret portal's answer")
            }
            if secret.count > secretSize { break }
        }
        guard secret.count == secretSize else {
            let count = secret.count
            wipe(&secret)
            throw DeviceIDError(.keyring, count > secretSize
                ? "the Secret portal's back end gave a secret of more than \(secretSize) bytes"
                : "the Secret portal's back end gave \(count) of \(secretSize) bytes and ended")
        }
        return secret
    }

    private static func timedOut(_ milliseconds: UInt32, _ what: String) -> DeviceIDError {
        DeviceIDError(.timedOut, "the Secret portal \(what) within \(milliseconds) ms")
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })
    }
}
