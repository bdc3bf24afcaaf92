import Foundation
@testable import DeviceID

/// A Secret Service transport that answers from a script: the whole of a new transport is this
/// one file (`SecretServiceTransport`). Replies are keyed by "Interface.Member" (and, for
/// properties, "Interface.Member path"); every call and every message sent is recorded.
final class ScriptedTransport: SecretServiceTransport {
    var replies: [String: Result<[DBusValue], DeviceIDError>] = [:]
    /// Replies given once each, in order, before `replies` answers the same key (a service whose
    /// answer changes between two calls).
    var firstReplies: [String: [Result<[DBusValue], DeviceIDError>]] = [:]
    /// The arguments of the signal a prompt completes with; nil: it never comes.
    var promptCompletion: [DBusValue]?
    /// Milliseconds to wait before answering "Interface.Member" (a slow service).
    var delays: [String: UInt32] = [:]
    /// The bus daemon's GetNameOwner: well-known name to unique name.
    var owners: [String: String] = [:]
    private(set) var calls: [String] = []
    private(set) var sent: [String] = []

    func call(_ call: MethodCall, timeout: Int32, secretLimit: Int?) throws(DeviceIDError) -> [DBusValue] {
        let member = "\(call.interface).\(call.member)"
        calls.append(member)
        if let delay = delays[member] { usleep(delay * 1000) }
        if member == "org.freedesktop.DBus.GetNameOwner", case .string(let name)? = call.arguments.first {
            guard let owner = owners[name] else { throw DeviceIDError(.keyring, "\(name) has no owner") }
            return [.string(owner)]
        }
        if let once = firstReplies[member], let first = once.first {
            firstReplies[member] = Array(once.dropFirst())
            return try first.get()
        }
        let reply = replies["\(member) \(call.path)"] ?? replies[member]
        guard let reply else { throw DeviceIDError(.keyring, "the script has no reply to \(member)") }
        return try reply.get()
    }

    func send(_ call: MethodCall) {
        sent.append("\(call.interface).\(call.member) \(call.path)")
    }

    var uniqueName: String { ":1.7" }

    func awaitSignal(path: String, interface: String, member: String, owner: String, end: Int,
                     gone: DeviceIDError, start: () throws(DeviceIDError) -> Void) throws(DeviceIDError) -> [DBusValue]? {
        try start()
        return promptCompletion
    }

    func transferSession(_ conversation: SecretService.Conversation) throws(DeviceIDError) -> String {
        "/org/freedesktop/secrets/session/1"
    }

    func dropTransferSession() {}

    /// A conversation over this transport, whose deadline is `endingIn` ms away.
    func conversation(interactive: Bool = false, endingIn: Int = 1000) -> SecretService.Conversation {
        let deadline = SecretService.Deadline(milliseconds: 1000, promptMilliseconds: interactive ? 1000 : nil)
        return SecretService.Conversation(self, busName: SessionBus.defaultServiceName, deadline: deadline,
                                          end: Monotonic.milliseconds() + endingIn, transfer: .encrypted)
    }
}
