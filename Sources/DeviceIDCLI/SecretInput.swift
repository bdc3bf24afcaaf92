import DeviceID
import CDeviceIDLibc

/// Reads a secret from standard input, never from argv (where `ps` shows it). From a terminal:
/// one line, prompted, without echo. From a pipe or file: every byte, as given.
enum SecretInput {
    static func read() throws(DeviceIDError) -> [UInt8] {
        isatty(STDIN_FILENO) == 1 ? try readLine() : try readAll()
    }

    /// Room for the largest secret and one byte more, reserved at once: an array that grows
    /// leaves copies of its earlier contents in freed memory.
    private static func buffer() -> [UInt8] {
        var bytes = [UInt8]()
        bytes.reserveCapacity(DeviceIdentity.maximumSecretSize + 4096 + 1)
        return bytes
    }

    private static func readAll() throws(DeviceIDError) -> [UInt8] {
        var bytes = buffer()
        var chunk = [UInt8](repeating: 0, count: 4096)
        defer { SecretMemory.wipe(&chunk) }
        while true {
            let n = chunk.withUnsafeMutableBytes { CDeviceIDLibc.read(STDIN_FILENO, $0.baseAddress!, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                SecretMemory.wipe(&bytes)
                throw DeviceIDError(.io, "cannot read the secret from standard input: \(String(cString: strerror(errno)))")
            }
            if n == 0 { return bytes }
            bytes += chunk[0..<n]
            if bytes.count > DeviceIdentity.maximumSecretSize {
                SecretMemory.wipe(&bytes)
                throw DeviceIDError(.tooLarge, "the secret is longer than \(DeviceIdentity.maximumSecretSize) bytes")
            }
        }
    }

    private static func readLine() throws(DeviceIDError) -> [UInt8] {
        Output.write(Array("Secret: ".utf8), to: STDERR_FILENO)
        var saved = termios()
        let haveTerminal = tcgetattr(STDIN_FILENO, &saved) == 0
        if haveTerminal {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet)
        }
        defer {
            if haveTerminal { tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved) }
            Output.write([10], to: STDERR_FILENO)
        }
        var bytes = buffer()
        var byte: UInt8 = 0
        defer { byte = 0 }
        while CDeviceIDLibc.read(STDIN_FILENO, &byte, 1) == 1 && byte != UInt8(ascii: "\n") {
            bytes.append(byte)
            guard bytes.count <= DeviceIdentity.maximumSecretSize else {
                SecretMemory.wipe(&bytes)
                throw DeviceIDError(.tooLarge, "the secret is longer than \(DeviceIdentity.maximumSecretSize) bytes")
            }
        }
        return bytes
    }
}
