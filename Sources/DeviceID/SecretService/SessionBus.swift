/// Where the Secret Service is: the session bus's address and the bus name it answers on, read
/// from the environment once per call, for both transports.
enum SessionBus {
    static let defaultServiceName = "org.freedesktop.secrets"

    /// The session bus address, or why no session bus would be reached without autolaunching one
    /// (DeviceID never autolaunches: a bus started for one call would hold no keyring).
    static func address() -> Result<String, DeviceIDError> {
        if let address = Environment.value("DBUS_SESSION_BUS_ADDRESS") {
            // Clients try the addresses of the list in order: an autolaunch: entry anywhere would
            // run dbus-launch when the ones before it fail.
            if address.split(separator: ";").contains(where: { $0.hasPrefix("autolaunch:") }) {
                return .failure(.noKeyringHere("DBUS_SESSION_BUS_ADDRESS asks for autolaunch, which DeviceID never does"))
            }
            return .success(address)
        }
        let runtime: String?
        do throws(DeviceIDError) {
            runtime = try Environment.path("XDG_RUNTIME_DIR", remedy: "set DBUS_SESSION_BUS_ADDRESS to the session bus")
        } catch {
            return .failure(error)
        }
        if let runtime, SystemFile.isSocket(runtime + "/bus") {
            return .success("unix:path=" + escaped(runtime + "/bus"))
        }
        return .failure(.noKeyringHere(
            "no session bus (DBUS_SESSION_BUS_ADDRESS is unset and $XDG_RUNTIME_DIR/bus is absent)"))
    }

    /// A value of a D-Bus address, with every byte outside the specification's optionally-escaped
    /// set ([-0-9A-Za-z_/.\\*]) written %XX, as libdbus requires (GLib escapes the same way).
    static func escaped(_ value: String) -> String {
        var out = ""
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "_"), UInt8(ascii: "/"), UInt8(ascii: "."),
                 UInt8(ascii: "\\"), UInt8(ascii: "*"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let digits = Array("0123456789abcdef".unicodeScalars)
                out += "%"
                out.unicodeScalars.append(digits[Int(byte >> 4)])
                out.unicodeScalars.append(digits[Int(byte & 0xF)])
            }
        }
        return out
    }

    /// Why no session bus would be reached, or nil when one may be.
    static func problem() -> String? {
        if case .failure(let error) = address() { return error.detail }
        return nil
    }

    /// The Secret Service's bus name: `SECRET_SERVICE_BUS_NAME` (as libsecret honours it) when it
    /// is a valid bus name, else `.invalidArgument`: never handed on to a client library.
    static func serviceName() throws(DeviceIDError) -> String {
        guard let name = Environment.value("SECRET_SERVICE_BUS_NAME") else { return defaultServiceName }
        guard DBusSyntax.isBusName(name) else {
            throw DeviceIDError(.invalidArgument, "SECRET_SERVICE_BUS_NAME is not a D-Bus bus name")
        }
        return name
    }
}
