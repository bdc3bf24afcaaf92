/// Entry points for the fuzzers in Tests/fuzz: every parser of untrusted bytes, with the
/// invariants each must keep. A violated invariant traps, which is what the fuzzer looks for.
package enum FuzzTargets {
    package static func parsers(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)

        if let id = ID128(parsing: text) {
            precondition(ID128(parsing: id.uuidString) == id, "UUID text round trip")
            precondition(ID128(parsing: id.format(uppercase: true, dashes: false)) == id, "compact round trip")
        }
        if let mac = MACAddress(parsing: text) {
            precondition(MACAddress(parsing: mac.text(compact: false))?.bytes == mac.bytes, "MAC round trip")
        }
        if let record = try? IdentifierRecord(parsing: bytes) {
            precondition((try? IdentifierRecord(parsing: record.serialized())) == record, "record round trip")
        }
        if let id = try? MachineID.parse(bytes, path: "fuzz") {
            precondition(!id.isNull, "an all-zero machine ID was accepted")
        }
        let key = StoreKey.secret(service: "fuzz", account: "fuzz")
        if let value = try? FileEnvelope.decode(bytes, expecting: key) {
            precondition((try? FileEnvelope.encode(key: key, value: value)) == bytes, "envelope round trip")
        }
        if let envelope = try? FileEnvelope.encode(key: key, value: bytes) {
            precondition((try? FileEnvelope.decode(envelope, expecting: key)) == bytes, "envelope of fuzz bytes")
        }
        _ = try? Names.validate(text, "name")
        _ = try? NetworkInterfaces.validate(text)
        _ = try? MachineID.appID(from: text)
    }
}
