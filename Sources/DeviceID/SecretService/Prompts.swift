extension SecretService.Conversation {
    /// The prompt policy, for every provider and transport.
    ///
    /// A prompt is not always a person: KeePassXC answers every CreateItem and Item.Delete with
    /// one, and KWallet every Unlock, and they complete at once when run with `Prompt("")` (an
    /// empty window id). So a prompt is run and its `Completed` signal awaited until the
    /// conversation's deadline. Whether a path that can show a dialog is started at all is
    /// decided before (`usableDefaultCollection`).
    ///
    /// Returns the prompt's result (inside its variant), or nil when it was dismissed. At the
    /// deadline the prompt is dismissed where that is safe, and the call is `.locked` with words.
    func runPrompt(_ prompt: String) throws(DeviceIDError) -> DBusValue? {
        // Decided before the wait: at the deadline there may be no time left to ask.
        let mayDismiss = !deadline.interactive || mayDismissPrompts()
        let completed: [DBusValue]?
        do throws(DeviceIDError) {
            completed = try transport.awaitSignal(path: prompt, interface: SecretService.Spec.prompt,
                                                  member: "Completed", owner: busName, end: end,
                                                  gone: SecretService.providerWentAway("the prompt was open")) { () throws(DeviceIDError) in
                _ = try call(prompt, SecretService.Spec.prompt, "Prompt", [.string("")], "cannot run the prompt")
            }
        } catch where error.code == .timedOut && Monotonic.milliseconds() >= end {
            // The Prompt call itself met the deadline: the service may show the prompt after all.
            completed = nil
        }
        guard let completed else {
            // Whatever the prompt shows (an unlock dialog, a confirmation) must not outlive the call.
            if mayDismiss {
                transport.send(MethodCall(destination: busName, path: prompt, interface: SecretService.Spec.prompt,
                                          member: "Dismiss", context: "cannot dismiss the prompt"))
            }
            throw SecretService.promptExpired(deadline)
        }
        guard let dismissed = completed[safe: 0]?.boolean, case .variant(let result)? = completed[safe: 1] else {
            throw SecretService.malformed("Prompt.Completed")
        }
        return dismissed ? nil : result
    }

    /// Whether a prompt that outlived the deadline may be dismissed in interactive mode:
    /// gnome-keyring 42 aborts when its unlock prompt is dismissed while the prompter shows
    /// (measured on 42.1 under Xvfb), so there the dialog is left to the person; entering the
    /// password later only unlocks. A provider that cannot be told is not dismissed either.
    func mayDismissPrompts() -> Bool {
        guard let owner = nameOwner(busName) else { return false }
        return nameOwner("org.gnome.keyring") != owner
    }
}
