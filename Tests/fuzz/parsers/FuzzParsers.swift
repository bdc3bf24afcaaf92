// libFuzzer over every parser of untrusted bytes (DeviceID's FuzzTargets.parsers).
//   scripts/fuzz parsers 60        (builds with -sanitize=fuzzer,address and runs for 60 s)
// Built normally (swift build), it replays the files named on its command line instead.
import DeviceID

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
