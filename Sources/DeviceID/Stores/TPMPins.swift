/// The TPM pins (docs/STATE.md, "TPM pins"): for each machine and TPM address, the Name of the key
/// the first conversation's session was salted to, kept in the user's file store, so that a later
/// conversation whose salting key is another is refused before anything is sent under it
/// (docs/HARDWARE-ID.md, "Salted sessions"). Trust on first use, as systemd's tpm2-util pins the
/// SRK. No ID is derived from a pin: removing every one changes none.
enum TPMPins {
    static let label = "deviceid.tpm-pin.v1"

    /// Where this machine's pin for `address` is kept: a `state` item of the file store in the
    /// context's directory (`DEVICEID_STORE_DIR` from the environment, else the default one), filed
    /// under HMAC-SHA256(machine ID, label ‖ 0 ‖ address) — never the machine ID itself — so that a
    /// home copied to another machine holds no pin for that machine. Nil where none can be kept: no
    /// machine ID, no directory.
    static func place(for address: TPMAddress) -> (store: FileStore, key: StoreKey)? {
        guard let machine = try? MachineID.raw() else { return nil }
        let path: String
        if let chosen = try? Environment.path(Environment.storeDirectory), chosen.hasPrefix("/") {
            path = chosen
        } else if let location = try? StoreDirectory.defaultLocation() {
            path = location.path
        } else {
            return nil
        }
        let mac = SHA256.hmac(key: machine.array, message: Array(label.utf8) + [0] + Array(address.description.utf8))
        return (FileStore(path: path), .state("tpm-pin " + Hex.encode(mac)))
    }

    /// The Name pinned for `address`; nil when none is (first use). A store that cannot answer, or
    /// holds no Name, fails: never "none".
    static func read(_ address: TPMAddress) throws(DeviceIDError) -> [UInt8]? {
        guard let place = place(for: address) else { return nil }
        return try read(place, address)
    }

    /// The Name kept at `place`, this machine's for `address`, as `read(_:)` says.
    fileprivate static func read(_ place: (store: FileStore, key: StoreKey), _ address: TPMAddress) throws(DeviceIDError)
        -> [UInt8]? {
        do throws(DeviceIDError) {
            guard let name = try place.store.read(place.key) else { return nil }
            guard (3...68).contains(name.count) else { throw DeviceIDError(.corrupt, "\(name.count) bytes, no Name") }
            return name
        } catch {
            throw DeviceIDError(error.code, "this machine's pin for the TPM at \(address): \(error.detail); "
                                    + "deviceid tpm-pin forget removes it")
        }
    }

    /// Removes this machine's pin for `address`: the next conversation pins the key it meets.
    /// False when none was held.
    static func forget(_ address: TPMAddress) throws(DeviceIDError) -> Bool {
        guard let place = place(for: address) else { return false }
        return try place.store.delete(place.key)
    }

    /// What `doctor` says of the pin, given the Name held before its conversation.
    static func words(_ address: TPMAddress, held: [UInt8]?) -> Words {
        if let held { return "salting key pinned on this machine (Name \(Hex.encode(held.prefix(8)))…), and this TPM's" }
        if let name = try? read(address) {
            return "salting key pinned now (first use on this machine: Name \(Hex.encode(name.prefix(8)))…)"
        }
        return place(for: address) == nil ? "salting key not pinned: no machine ID to file a pin under"
                                          : "salting key not pinned: the file store could not keep it"
    }
}

extension TPMAddress {
    /// `resolved()`, with this machine's pin for that address (`TPMPins`): its conversations refuse
    /// a salting key of another Name, and pin the first one when none is held.
    static func resolvedWithPin() throws(DeviceIDError) -> TPMAddress {
        var address = try resolved()
        guard let place = TPMPins.place(for: address) else { return address }  // no pin can be kept: as at first use
        address.pin = TPMPin(name: try TPMPins.read(place, address)) { name in try? place.store.write(place.key, name) }
        return address
    }
}
