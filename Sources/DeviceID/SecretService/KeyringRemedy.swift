/// What a user can do about a keyring that cannot keep anything now, by provider: the words that
/// end every "no default collection" and "locked" error, so that none is a dead end. Each shell
/// command here was tried against the provider it names (Tests/providers, Tests/python/test_first_hour.py).
enum KeyringRemedy {
    /// The Secret Service has no default collection.
    static func noCollection(_ provider: String) -> Words {
        let create: String = switch provider {
        case "GNOME Keyring":
            "create a keyring and make it the default in \"Passwords and Keys\" (seahorse), or from a shell "
                + "create and open the login keyring: printf '%s' PASSWORD | gnome-keyring-daemon --replace --unlock"
        case "KeePassXC":
            "open a database in KeePassXC with Secret Service integration enabled for it (Database Settings, "
                + "Secret Service Integration)"
        case "KWallet":
            "create a wallet (KDE's System Settings, KWallet, or kwalletmanager5)"
        default:
            "create or open a keyring in the password manager and make it the default collection"
        }
        return "\(create); or choose the file backend (--backend file, DEVICEID_BACKEND=file) to keep IDs "
            + "in the file store alone"
    }

    /// The default collection is locked; `interactive`: whether the call could show a prompt.
    static func locked(_ provider: String, interactive: Bool) -> Words {
        let shell: String = switch provider {
        case "GNOME Keyring":
            "; from a shell with no display: printf '%s' PASSWORD | gnome-keyring-daemon --replace --unlock"
        case "KeePassXC": "; or unlock the database in KeePassXC's window"
        case "KWallet": "; or open the wallet in kwalletmanager5"
        default: ""
        }
        let prompt = interactive ? "" : "; DeviceID shows no unlock dialog unless interactive mode is on "
            + "(--interactive, DEVICEID_INTERACTIVE=1, deviceid_set_interactive)"
        return "unlock it in the desktop session\(prompt)\(shell)"
    }

    /// Why an unlock prompt ended without unlocking, as far as this process can tell.
    static func promptDismissed() -> String {
        let display = ["DISPLAY", "WAYLAND_DISPLAY"].contains { (Environment.value($0) ?? "").isEmpty == false }
        return display
            ? "the unlock prompt was dismissed: cancelled, or no prompter (gcr-prompter) could show it"
            : "the unlock prompt was dismissed: there is no display to show it on (neither DISPLAY nor "
                + "WAYLAND_DISPLAY is set)"
    }
}
