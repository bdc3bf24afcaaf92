/// The app sandbox this process runs in, if any: a Flatpak (`/.flatpak-info`, which only Flatpak
/// puts at the root and the portal itself reads) or a Snap (`SNAP_NAME`, set by snapd for every
/// command of a snap). Inside one, the Secret Service is usually out of reach (Flathub refuses
/// `--talk-name=org.freedesktop.secrets`; Snap needs the `password-manager-service` plug
/// connected), the app's files are removed with it, and the Secret portal keeps one secret per
/// app on the host (docs/ENVIRONMENTS.md "Sandboxes and containers").
public enum Sandbox: Sendable, Equatable {
    /// A Flatpak app, with its app id (`[Application] name=` of `/.flatpak-info`).
    case flatpak(appID: String)
    /// A Snap, with its name (`SNAP_NAME`).
    case snap(name: String)

    /// The app id or snap name.
    public var name: String {
        switch self {
        case .flatpak(let appID): appID
        case .snap(let name): name
        }
    }

    static let flatpakInfo = "/.flatpak-info"

    /// The sandbox of this process, from `/.flatpak-info` and then `SNAP_NAME`; nil on a host.
    static func detect() -> Sandbox? {
        if let info = SystemFile.text(flatpakInfo, limit: 65536) {
            // A /.flatpak-info without an app id is still a Flatpak: the portal gives it nothing.
            return .flatpak(appID: applicationName(in: info) ?? "")
        }
        // snapd sets SNAP_NAME for every command of a snap, and a classic snap (an editor, a
        // terminal) passes it on to whatever it starts, unconfined. A strictly confined snap runs
        // with HOME set to its SNAP_USER_DATA; a classic one keeps the user's home.
        if let name = Environment.value("SNAP_NAME"), let data = try? Environment.path("SNAP_USER_DATA"),
           let home = try? Environment.path("HOME"), home.utf8.elementsEqual(data.utf8) {
            return .snap(name: name)
        }
        return nil
    }

    /// `name=` of the `[Application]` group of a GKeyFile (`/.flatpak-info`).
    static func applicationName(in info: String) -> String? {
        var inApplication = false
        for line in info.split(separator: "\n", omittingEmptySubsequences: true) {
            let text = String(line).trimmingSpaces()
            if text.hasPrefix("[") {
                inApplication = text == "[Application]"
            } else if inApplication, let equals = text.firstIndex(of: "="),
                      String(text[..<equals]).trimmingSpaces() == "name" {
                // GKeyFile's rule, which the portal reads it with: spaces around key and value go.
                let value = String(text[text.index(after: equals)...]).trimmingSpaces()
                return value.isEmpty ? nil : value
            }
        }
        return nil
    }

    /// The directories removed with the app: a Flatpak's `~/.var/app/ID` (`flatpak uninstall
    /// --delete-data`), a Snap's `SNAP_USER_DATA`, `SNAP_USER_COMMON`, `SNAP_DATA` and
    /// `SNAP_COMMON` (`snap remove`, which keeps a snapshot for 31 days unless `--purge`).
    var appDataDirectories: [String] {
        switch self {
        case .flatpak(let appID):
            // A HOME that is not UTF-8 names no directory here (the store refuses it: `Environment.path`).
            guard !appID.isEmpty, let home = try? Environment.path("HOME"), home.hasPrefix("/") else { return [] }
            return [home + "/.var/app/" + appID]
        case .snap:
            return ["SNAP_USER_DATA", "SNAP_USER_COMMON", "SNAP_DATA", "SNAP_COMMON"].compactMap { name in
                guard let path = try? Environment.path(name), path.hasPrefix("/") else { return nil }
                return path
            }
        }
    }
}
