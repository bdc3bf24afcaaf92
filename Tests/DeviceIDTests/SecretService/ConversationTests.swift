import Foundation
import XCTest
@testable import DeviceID

/// The Secret Service's one logic (`SecretService.Conversation` and its prompt policy) over a
/// scripted transport: what each answer means, whichever client library carried it.
final class ConversationTests: XCTestCase {
    private let collection = "/org/freedesktop/secrets/collection/login"
    private let prompt = "/org/freedesktop/secrets/prompt/p1"
    private let item = "/org/freedesktop/secrets/collection/login/7"

    override func setUp() {
        // Each case writes to a scripted KeePassXC from quiet (KeePassXCSavesTests tests the wait).
        KeePassXCSaves.forgetWrites()
    }

    private func creatingThroughAPrompt(owner: String?) -> ScriptedTransport {
        let transport = ScriptedTransport()
        transport.replies["org.freedesktop.Secret.Collection.CreateItem"] = .success([.objectPath("/"), .objectPath(prompt)])
        transport.replies["org.freedesktop.Secret.Prompt.Prompt"] = .success([])
        if let owner {
            transport.owners = ["org.freedesktop.secrets": ":1.5", owner: ":1.5"]
        }
        return transport
    }

    private func create(_ conversation: SecretService.Conversation) throws -> String {
        try conversation.createItem(in: collection, label: "l", attributes: [("service", "s")], value: Array("v".utf8))
    }

    func testAPromptThatCompletesGivesTheCreatedItem() throws {
        let transport = creatingThroughAPrompt(owner: "org.keepassxc.KeePassXC.MainWindow")
        transport.promptCompletion = [.boolean(false), .variant(.objectPath(item))]
        XCTAssertEqual(try create(transport.conversation()), item)
        XCTAssertEqual(transport.calls.filter { $0.hasSuffix("Prompt.Prompt") }.count, 1)
        XCTAssertEqual(transport.sent, [], "nothing dismissed")
    }

    func testAPromptStillOpenAtTheDeadlineIsDismissedAndLocked() {
        let transport = creatingThroughAPrompt(owner: "org.keepassxc.KeePassXC.MainWindow")
        XCTAssertThrowsError(try create(transport.conversation())) { error in
            let error = error as! DeviceIDError
            XCTAssertEqual(error.code, .locked)
            XCTAssertTrue(error.detail.contains("did not complete within 1000 ms"), error.detail)
            XCTAssertTrue(error.detail.contains("unless interactive mode is on"), error.detail)
        }
        XCTAssertEqual(transport.sent, ["org.freedesktop.Secret.Prompt.Dismiss \(prompt)"])
    }

    func testGnomeKeyringsDialogIsLeftToThePersonInInteractiveMode() {
        // gnome-keyring 42 aborts when its unlock prompt is dismissed while the prompter shows.
        let transport = creatingThroughAPrompt(owner: "org.gnome.keyring")
        XCTAssertEqual(errorCode { _ = try self.create(transport.conversation(interactive: true)) }, .locked)
        XCTAssertEqual(transport.sent, [], "not dismissed")
        let other = creatingThroughAPrompt(owner: "org.keepassxc.KeePassXC.MainWindow")
        XCTAssertEqual(errorCode { _ = try self.create(other.conversation(interactive: true)) }, .locked)
        XCTAssertEqual(other.sent.count, 1, "another provider's prompt is dismissed")
    }

    func testADismissedPromptCreatesNothingAndIsLocked() {
        // As a dismissed Delete: the person (KeePassXC's "allow create"?) said no.
        let transport = creatingThroughAPrompt(owner: nil)
        transport.promptCompletion = [.boolean(true), .variant(.string(""))]
        XCTAssertEqual(errorCode { _ = try self.create(transport.conversation()) }, .locked)
    }

    func testAPromptCallThatMeetsTheDeadlineIsDismissedAndLocked() {
        let transport = creatingThroughAPrompt(owner: "org.keepassxc.KeePassXC.MainWindow")
        transport.replies["org.freedesktop.Secret.Prompt.Prompt"] = .failure(DeviceIDError(.timedOut, "no reply"))
        // The deadline leaves a write to KeePassXC its budget however slow the build (ASan), and
        // the Prompt call's reply comes past it.
        let deadline = KeePassXCSaves.writeBudgetMilliseconds + 200
        transport.delays["org.freedesktop.Secret.Prompt.Prompt"] = UInt32(deadline + 150)
        let conversation = transport.conversation(endingIn: deadline)
        XCTAssertEqual(errorCode { _ = try self.create(conversation) }, .locked)
        XCTAssertEqual(transport.sent, ["org.freedesktop.Secret.Prompt.Dismiss \(prompt)"])
    }

    func testAnUnknownProviderIsNotDismissedInInteractiveMode() {
        let transport = creatingThroughAPrompt(owner: nil)  // GetNameOwner fails
        XCTAssertEqual(errorCode { _ = try self.create(transport.conversation(interactive: true)) }, .locked)
        XCTAssertEqual(transport.sent, [], "it may be gnome-keyring, which aborts when its dialog is dismissed")
    }

    func testNoDefaultCollectionIsBelievedOnlyWhenSaidTwice() throws {
        // GNOME Keyring answers "/" when its per-caller lookup fails, not only when there is none.
        let transport = ScriptedTransport()
        transport.firstReplies["org.freedesktop.Secret.Service.ReadAlias"] = [.success([.objectPath("/")])]
        transport.replies["org.freedesktop.Secret.Service.ReadAlias"] = .success([.objectPath(collection)])
        transport.replies["org.freedesktop.DBus.Properties.Get"] = .success([.variant(.boolean(false))])
        let found = try transport.conversation().defaultCollection()
        XCTAssertEqual(found.path, collection)
        XCTAssertEqual(found.state, .unlocked)

        let none = ScriptedTransport()
        none.replies["org.freedesktop.Secret.Service.ReadAlias"] = .success([.objectPath("/")])
        XCTAssertEqual(try none.conversation().defaultCollection().state, .missing)
        XCTAssertEqual(none.calls, Array(repeating: "org.freedesktop.Secret.Service.ReadAlias", count: 2))
    }

    func testAStringWhereAnObjectPathBelongsIsMalformed() {
        for reply: DBusValue in [.string(collection), .objectPath("not a path"), .objectPath("/trailing/"), .boolean(true)] {
            let transport = ScriptedTransport()
            transport.replies["org.freedesktop.Secret.Service.ReadAlias"] = .success([reply])
            XCTAssertThrowsError(try transport.conversation().readAlias("default")) { error in
                XCTAssertEqual((error as! DeviceIDError).code, .keyring)
                XCTAssertTrue((error as! DeviceIDError).detail.contains("malformed reply (ReadAlias)"))
            }
        }
    }

    func testSearchResultsMustAllBeObjectPaths() {
        let transport = ScriptedTransport()
        transport.replies["org.freedesktop.Secret.Service.SearchItems"] =
            .success([.array(element: "s", [.string(item)]), DBusValue.paths([])])
        XCTAssertEqual(errorCode { _ = try transport.conversation().searchPaths([("service", "s")]) }, .keyring)
        transport.replies["org.freedesktop.Secret.Service.SearchItems"] = .success([DBusValue.paths([item]), DBusValue.paths([])])
        XCTAssertEqual(try transport.conversation().searchPaths([("service", "s")]).unlocked, [item])
    }

    func testASecretThatDoesNotComeBackIsNeverNone() {
        let transport = ScriptedTransport()
        transport.replies["org.freedesktop.Secret.Service.GetSecrets"] =
            .success([.dictionary(key: "o", value: "(oayays)", [])])
        XCTAssertThrowsError(try transport.conversation().secrets([item], limit: 100)) { error in
            XCTAssertEqual((error as! DeviceIDError).detail, SecretService.secretNotLoaded)
        }
    }

    func testALockedCollectionIsNotUnlockedOutsideInteractiveMode() {
        let transport = ScriptedTransport()
        transport.owners = ["org.freedesktop.secrets": ":1.9", "org.gnome.keyring": ":1.9"]
        transport.replies["org.freedesktop.Secret.Service.ReadAlias"] = .success([.objectPath(collection)])
        transport.replies["org.freedesktop.DBus.Properties.Get \(collection)"] = .success([.variant(.boolean(true))])
        XCTAssertThrowsError(try transport.conversation().usableDefaultCollection()) { error in
            XCTAssertEqual((error as! DeviceIDError).code, .locked)
            XCTAssertTrue((error as! DeviceIDError).detail.contains("GNOME Keyring"))
        }
        XCTAssertFalse(transport.calls.contains("org.freedesktop.Secret.Service.Unlock"), "no unlock dialog started")
    }

    func testTheErrorTableIsKeyedByDBusNameAndPhase() {
        let table: [(String?, SecretService.Phase, DeviceIDError.Code, Bool)] = [
            ("org.freedesktop.DBus.Error.ServiceUnknown", .calling, .unavailable, true),
            ("org.freedesktop.DBus.Error.Spawn.ChildExited", .opening, .unavailable, false),
            ("org.freedesktop.DBus.Error.NoReply", .calling, .timedOut, false),
            ("org.freedesktop.Secret.Error.IsLocked", .calling, .locked, false),
            ("org.freedesktop.DBus.Error.Failed", .calling, .keyring, false),
            (nil, .connecting, .unavailable, true),
            (nil, .opening, .unavailable, false),
            (nil, .calling, .keyring, false),
        ]
        for (name, phase, code, absent) in table {
            let error = SecretService.error(name: name, message: "m", context: "c", phase: phase)
            XCTAssertEqual(error.code, code, "\(name ?? "nil") \(phase)")
            XCTAssertEqual(error.keyringAbsent, absent, "\(name ?? "nil") \(phase)")
        }
    }

    func testDBusSyntax() {
        for path in ["/", "/a", "/org/freedesktop/secrets/collection/login_2"] { XCTAssertTrue(DBusSyntax.isObjectPath(path), path) }
        for path in ["", "a", "//", "/a/", "/a//b", "/a-b", "/é", "not a path"] { XCTAssertFalse(DBusSyntax.isObjectPath(path), path) }
        for name in ["org.freedesktop.secrets", ":1.42", "org.kde.kwalletd6", "a.b-c"] { XCTAssertTrue(DBusSyntax.isBusName(name), name) }
        for name in ["", "org", "org..x", "1org.x", "not a bus name", ".a.b", String(repeating: "a.", count: 128) + "a"] {
            XCTAssertFalse(DBusSyntax.isBusName(name), name)
        }
    }

    /// DBusSyntax must refuse everything libdbus would abort on, and accept what it accepts (for
    /// unique bus names, a subset: the specification's rule): its answers are compared with
    /// libdbus's own validators over random strings of the characters that matter.
    func testDBusSyntaxAgreesWithLibDBusItself() throws {
        guard let library = dlopen("libdbus-1.so.3", RTLD_NOW) else { return XCTFail("libdbus-1.so.3 is not installed") }
        defer { dlclose(library) }
        typealias Validator = @convention(c) (UnsafePointer<CChar>, UnsafeMutableRawPointer?) -> UInt32
        let path = unsafeBitCast(dlsym(library, "dbus_validate_path"), to: Validator.self)
        let busName = unsafeBitCast(dlsym(library, "dbus_validate_bus_name"), to: Validator.self)
        let interface = unsafeBitCast(dlsym(library, "dbus_validate_interface"), to: Validator.self)
        let member = unsafeBitCast(dlsym(library, "dbus_validate_member"), to: Validator.self)
        let alphabet = Array("/._-:aZ09é ")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let text = String((0..<Int.random(in: 0...10, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            XCTAssertEqual(DBusSyntax.isObjectPath(text), path(text, nil) != 0, "object path \(text.debugDescription)")
            if text.hasPrefix(":") {
                // libdbus is laxer than the specification for unique names (":" alone passes it):
                // what DeviceID accepts, libdbus must.
                if DBusSyntax.isBusName(text) { XCTAssertNotEqual(busName(text, nil), 0, "bus name \(text.debugDescription)") }
            } else {
                XCTAssertEqual(DBusSyntax.isBusName(text), busName(text, nil) != 0, "bus name \(text.debugDescription)")
            }
            XCTAssertEqual(DBusSyntax.isInterface(text), interface(text, nil) != 0, "interface \(text.debugDescription)")
            XCTAssertEqual(DBusSyntax.isMember(text), member(text, nil) != 0, "member \(text.debugDescription)")
        }
    }
}
