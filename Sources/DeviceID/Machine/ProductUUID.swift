/// The firmware's (DMI/SMBIOS) product UUID, `/sys/class/dmi/id/product_uuid`. Usually readable
/// by root only; absent on many VMs. Raw hardware identity: only the `raw` call returns it.
public enum ProductUUID {
    public static func raw(sysfsRoot: String? = nil) throws(DeviceIDError) -> ID128 {
        let root = try Environment.sysfs(sysfsRoot)
        let path = root + "/class/dmi/id/product_uuid"
        let bytes = try SystemFile.read(path, limit: 64)
        var text = String(decoding: bytes, as: UTF8.self)
        while text.last == "\n" { text.removeLast() }
        guard let id = ID128(parsing: text), !id.isNull else {
            throw DeviceIDError(.corrupt, "\(path) does not hold a UUID")
        }
        return id
    }
}
