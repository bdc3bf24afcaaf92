import CDeviceIDTPM
import CDeviceIDLibc

/// The words for a `device:` path that is no TPM resource manager (`dids_tpm_device_kind`, decided
/// in C by fstat and sysfs when the path is opened, never by its name).
enum TPMDeviceKind {
    static func words(_ kind: UInt32, _ path: String) -> Words {
        let use = "DeviceID uses a TPM resource manager only (/dev/tpmrm0)"
        switch Int32(kind) {
        case Int32(DIDS_TPM_DEVICE_RAW.rawValue):
            return "\(path) is the raw TPM device (class tpm), which was not opened: \(use), as a program holding "
                + "the raw device bypasses the resource manager other programs rely on"
        case Int32(DIDS_TPM_DEVICE_OTHER.rawValue):
            return "\(path) is a character device of class \(deviceClass(path).map { "'" + $0 + "'" } ?? "other than tpmrm"), "
                + "not a TPM: \(use)"
        case Int32(DIDS_TPM_DEVICE_NOT_CHARACTER.rawValue):
            return "\(path) is not a character device, so not a TPM: \(use)"
        default:
            return "\(path) is a character device the kernel lists under no class (no /sys/dev/char entry): \(use)"
        }
    }

    /// The class sysfs gives the device at `path` (for the words only; the decision was made in C).
    private static func deviceClass(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 64)
        guard dids_tpm_device_class(path, &buffer, buffer.count) == 0 else { return nil }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }
}
