import Foundation

/// A private directory under /tmp, removed when the test ends.
final class TemporaryDirectory {
    let path: String

    init() {
        let template = NSTemporaryDirectory() + "deviceid-test.XXXXXX"
        var bytes = Array(template.utf8CString)
        path = bytes.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }

    deinit {
        // Tests may have handed parts of it to another owner or made them read-only.
        _ = try? Process.run(URL(fileURLWithPath: "/bin/rm"), arguments: ["-rf", path]).waitUntilExit()
    }

    func sub(_ name: String) -> String { path + "/" + name }
}
