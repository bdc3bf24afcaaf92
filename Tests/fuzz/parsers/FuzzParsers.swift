// libFuzzer over every parser of untrusted bytes, with the invariants each must keep (a violated
// invariant traps, which is what the fuzzer looks for).
//   scripts/fuzz parsers 60        (builds with -sanitize=fuzzer,address and runs for 60 s)
// Built normally (swift build, debug or release), it replays the files named on its command line
// instead. It reaches the library's parsers through their `package` access (SwiftPM compiles every
// target of this package with one package name), not @testable import, so that `swift build -c
// release` builds it too; scripts/test checks that no target outside Tests/DeviceIDTests uses
// @testable.
import DeviceID

enum FuzzTargets {
    static func parsers(_ bytes: [UInt8]) {
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


@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzParsers(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    FuzzTargets.parsers(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
    return 0
}

#if !FUZZING
import Glibc

@main
struct Replay {
    static func main() {
        for path in CommandLine.arguments.dropFirst() {
            guard let file = fopen(path, "rb") else { continue }
            var bytes = [UInt8]()
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = fread(&chunk, 1, chunk.count, file)
                if n <= 0 { break }
                bytes += chunk[0..<n]
            }
            fclose(file)
            _ = bytes.withUnsafeBufferPointer { fuzzParsers($0.baseAddress, $0.count) }
        }
    }
}
#endif
