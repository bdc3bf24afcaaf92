// swift-tools-version:6.0
// DeviceID: a stable, private device identifier for Linux, kept in the user's keyring.
//
// Layers (one folder each):
//   CLibSecret, CLibCrypto   system libraries, found through pkg-config (libdbus, the Secret
//                            Service client of forked children, is loaded on first use instead)
//   CDeviceIDSupport         C for what Swift cannot do: the ethtool ioctl, secure_getenv, thread-local
//                            error text, the per-thread answer cache and UUID pool, the prompt-bounding
//                            SecretService subclass
//   DeviceID                 the Swift library (`import DeviceID`)
//   DeviceIDC                the @_cdecl thunks behind include/deviceid.h -> libdeviceid.so
//   DeviceIDCLI              the `deviceid` command
import PackageDescription

let root = Context.packageDirectory

let package = Package(
    name: "DeviceID",
    products: [
        .library(name: "DeviceID", targets: ["DeviceID"]),
        // The C library. Built with the Swift runtime linked in statically and with a version
        // script, so that C and Python users need no Swift toolchain and see only deviceid_*.
        .library(name: "deviceid", type: .dynamic, targets: ["DeviceIDC"]),
        .executable(name: "deviceid-cli", targets: ["DeviceIDCLI"]),
        .executable(name: "deviceid-example", targets: ["DeviceIDExample"]),
    ],
    targets: [
        .systemLibrary(
            name: "CLibSecret",
            pkgConfig: "libsecret-1",
            providers: [.apt(["libsecret-1-dev"])]
        ),
        .systemLibrary(
            name: "CLibCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .target(name: "CDeviceIDSupport", dependencies: ["CLibSecret"]),
        .target(
            name: "DeviceID",
            dependencies: ["CLibSecret", "CLibCrypto", "CDeviceIDSupport"]
        ),
        .target(
            name: "DeviceIDC",
            dependencies: ["DeviceID", "CDeviceIDSupport"],
            exclude: ["exports.map"],
            linkerSettings: [
                .unsafeFlags([
                    "-static-stdlib",
                    "-Xlinker", "-soname=libdeviceid.so.1",
                    "-Xlinker", "--version-script=\(root)/Sources/DeviceIDC/exports.map",
                ])
            ]
        ),
        .executableTarget(name: "DeviceIDCLI", dependencies: ["DeviceID"]),
        .executableTarget(name: "DeviceIDExample", dependencies: ["DeviceID"], path: "examples/swift"),
        .executableTarget(name: "DeviceIDFuzzParsers", dependencies: ["DeviceID"], path: "Tests/fuzz/parsers"),
        .testTarget(name: "DeviceIDTests", dependencies: ["DeviceID"]),
    ]
)
