import CDeviceIDFastPaths
import DeviceID

// Version, sizes and status texts: facts that never change, answered without allocation.

@_cdecl("deviceid_version_string")
public func deviceid_version_string() -> UnsafePointer<CChar> { StaticText.pointer(Version.string) }

@_cdecl("deviceid_version_major")
public func deviceid_version_major() -> Int32 { Int32(Version.major) }

@_cdecl("deviceid_version_minor")
public func deviceid_version_minor() -> Int32 { Int32(Version.minor) }

@_cdecl("deviceid_version_patch")
public func deviceid_version_patch() -> Int32 { Int32(Version.patch) }

@_cdecl("deviceid_uuid_string_max")
public func deviceid_uuid_string_max() -> UInt { UInt(ID128.stringLength + 1) }

@_cdecl("deviceid_name_max")
public func deviceid_name_max() -> UInt { UInt(Names.maximumLength + 1) }

@_cdecl("deviceid_secret_max")
public func deviceid_secret_max() -> UInt { UInt(DeviceIdentity.maximumSecretSize) }

@_cdecl("deviceid_mac_string_max")
public func deviceid_mac_string_max() -> UInt { 18 }

@_cdecl("deviceid_interface_name_max")
public func deviceid_interface_name_max() -> UInt { 16 }

@_cdecl("deviceid_md5_hex_max")
public func deviceid_md5_hex_max() -> UInt { UInt(Digests.Algorithm.md5.hexLength + 1) }

@_cdecl("deviceid_sha256_hex_max")
public func deviceid_sha256_hex_max() -> UInt { UInt(Digests.Algorithm.sha256.hexLength + 1) }

@_cdecl("deviceid_strerror")
public func deviceid_strerror(_ status: Int32) -> UnsafePointer<CChar> {
    StaticText.pointer(StaticText.summary(status))
}

@_cdecl("deviceid_status_name")
public func deviceid_status_name(_ status: Int32) -> UnsafePointer<CChar> {
    StaticText.pointer(StaticText.name(status))
}

@_cdecl("deviceid_last_error")
public func deviceid_last_error() -> UnsafePointer<CChar> { dids_last_error() }

@_cdecl("deviceid_source_name")
public func deviceid_source_name(_ source: Int32) -> UnsafePointer<CChar> {
    StaticText.pointer(StaticText.source(source))
}

@_cdecl("deviceid_free")
public func deviceid_free(_ pointer: UnsafeMutableRawPointer?) { Allocation.free(pointer) }
