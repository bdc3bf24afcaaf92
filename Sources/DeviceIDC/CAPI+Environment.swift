import CDeviceIDAPI
import CDeviceIDFastPaths
import DeviceID

// Where the process runs and what survives what there (include/deviceid.h, "Environment"): one
// snapshot per call, in a struct that later versions extend at its end.

/// What one look at the surroundings, the portal, the keyring and the mount table found: the
/// report when one can be made; where no store directory can be named, the surroundings alone,
/// with that status as both locations.
private struct Snapshot {
    var surroundings: Surroundings
    var report: EnvironmentReport?
    var failure: Int32 = 0

    init(_ instance: DeviceIdentity) throws(DeviceIDError) {
        do {
            let report = try instance.environment()
            self.report = report
            surroundings = report.surroundings
        } catch where error.code != .invalidArgument {
            surroundings = Surroundings.current()
            failure = error.code.rawValue
        }
    }

    /// Fills the caller's struct (C copies each text into its field: the strings reach it as
    /// `const char *` arguments, which costs no closures).
    func pack(into out: UnsafeMutableRawPointer, size: Int) {
        let location = report?.stableIDLocation
        var facts = dids_environment_facts(
            kind: surroundings.kind.rawValue, portal: report?.portal.rawValue ?? 0,
            store_location: report?.storeLocation.rawValue ?? failure,
            stable_id_location: location?.rawValue ?? failure, stable_id_survives: location?.survives ?? 0,
            machine_id_weak: surroundings.machineID.weak ? 1 : 0, protection: report?.protection.rawValue ?? 0,
            binding: report?.binding.rawValue ?? 0)
        dids_environment_pack(out, size, &facts, surroundings.name, report?.storePath ?? "", surroundings.machineID.detail,
                              report?.portalDetail ?? "", report?.bindingDetail ?? "")
    }
}

@c @implementation
public func deviceid_get_environment(_ context: OpaquePointer?, _ out: UnsafeMutablePointer<deviceid_environment>?,
                                     _ size: Int) -> Int32 {
    cStatus { () throws(DeviceIDError) in
        let known = dids_environment_size(), least = dids_environment_size_1_0()
        guard let out else { throw DeviceIDError(.invalidArgument, "out is NULL") }
        let given = UInt(bitPattern: size)
        // As openat2(2) bounds its struct by a page: a size past any version's is a caller's mistake.
        guard given >= UInt(least), given <= 65536 else {
            throw DeviceIDError(.invalidArgument, "size is \(given); deviceid_environment takes \(least) to \(known) bytes")
        }
        let snapshot = try Snapshot(Context.instance(context))
        let target = UnsafeMutableRawPointer(out)
        snapshot.pack(into: target, size: min(Int(given), known))
        // A newer caller's fields this library does not know: zero, their "not known" value.
        if given > UInt(known) {
            (target + known).initializeMemory(as: UInt8.self, repeating: 0, count: Int(given - UInt(known)))
        }
    }
}

@c @implementation
public func deviceid_environment_kind_name(_ kind: Int32) -> UnsafePointer<CChar> {
    StaticText.pointer(Surroundings.Kind(rawValue: kind)?.staticName ?? "unknown")
}

@c @implementation
public func deviceid_portal_state_name(_ state: Int32) -> UnsafePointer<CChar> {
    StaticText.pointer(EnvironmentReport.PortalState(rawValue: state)?.staticName ?? "unknown")
}

@c @implementation
public func deviceid_location_name(_ location: Int32) -> UnsafePointer<CChar> {
    StaticText.pointer(StorageLocation(rawValue: location)?.staticName ?? "unknown")
}

@c @implementation
public func deviceid_location_survives(_ location: Int32) -> UInt32 {
    StorageLocation(rawValue: location)?.survives ?? 0
}

extension StorageLocation {
    /// DEVICEID_SURVIVES_* bits.
    var survives: UInt32 {
        (survivesAppDataRemoval ? DEVICEID_SURVIVES_APP_DATA_REMOVAL : 0)
            | (survivesContainerRemoval ? DEVICEID_SURVIVES_CONTAINER_REMOVAL : 0)
    }
}
