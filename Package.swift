// swift-tools-version:6.0
// DeviceID: a stable, private device identifier for Linux, kept in the user's keyring.
//
// Layers (one folder each):
//   CDeviceIDLibc            the C library's headers, for both builds (Embedded Swift has no Glibc)
//   CDeviceIDSystem          C for the system calls Swift cannot make: the ethtool ioctl,
//                            secure_getenv, C11 atomics, a fork-aware swift_once, what fork() waits
//                            for and what a child closes (each file says why)
//   CDeviceIDPrimitives      SHA-256/HMAC, UUID text and a per-thread pool of randomness, in C so
//                            that the C ABI's fast paths can use them without Swift
//   CDeviceIDLibraries       the one loader of the libraries loaded on first use (dlopen), and the
//                            keyring's and digests' ones: libsecret with GLib, libcrypto, libdbus.
//                            Building needs none of their headers, and libdeviceid.so.2 NEEDs libc
//                            and libm only
//   CDeviceIDTPM             the TPM room: tpm2-tss's ABI and its loadable (tss2/), DeviceID's two
//                            TCTIs (transports/), the conversation (session/); its public header
//                            is the conversation API only
//   CDeviceIDFastPaths       the C ABI's thread-local state (answer cache, last error)
//   CDeviceIDAPI             include/deviceid.h and deviceid-techniques.h as a module, so that the
//                            compiler holds every thunk to its declaration; statuses.tsv, the one
//                            table of status codes (scripts/gen-abi)
//   DeviceID                 the Swift library (`import DeviceID`)
//   DeviceIDC                the `@c @implementation` thunks of include/*.h -> libdeviceid.so
//   DeviceIDCLI              the `deviceid` command
//
// Two builds from the same sources. The default is normal Swift: `import DeviceID` for Swift apps,
// `swift test`. With DEVICEID_EMBEDDED=1 in the environment, DeviceID, the C library and the CLI
// are compiled as Embedded Swift: no Swift runtime, no libstdc++, a few hundred KB; this is what
// `make` builds for C, Python and the shell (`DEVICEID_EMBEDDED=1 swift build -c release
// --build-path .build/embedded --product deviceid`). A package that depends on DeviceID never sets
// the variable, so none of the unsafe flags below reach it.
import PackageDescription

let root = Context.packageDirectory
let embedded = Context.environment["DEVICEID_EMBEDDED"] == "1"

/// Compiler settings of the Swift targets that go into libdeviceid and the CLI.
let swiftSettings: [SwiftSetting] = embedded
    ? [.enableExperimentalFeature("Embedded"), .unsafeFlags(["-wmo", "-Osize", "-Xcc", "-fPIC", "-Xfrontend", "-function-sections"])]
    : []

/// What a linked Embedded product needs besides libc: the Unicode tables String comparison uses
/// (from the toolchain's embedded directory), and unused sections dropped. Only flags every ELF
/// linker takes: the Swift driver links with whatever clang finds (gold, else GNU ld, which has no
/// --icf; Debian 13 ships gold separately), and --icf=all saved only 4 KB of the library and 8 KB of
/// the CLI.
let embeddedLinking: [String] = embedded
    ? ["-Xlinker", "-lswiftUnicodeDataTables", "-Xlinker", "--gc-sections"]
    : ["-static-stdlib"]

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
        .target(name: "CDeviceIDLibc"),
        .target(name: "CDeviceIDCLI"),
        // Its swift_once (fork_aware_once.c) replaces the Embedded standard library's weak one.
        .target(name: "CDeviceIDSystem", cSettings: embedded ? [.define("DEVICEID_EMBEDDED")] : []),
        .target(name: "CDeviceIDPrimitives"),
        .target(name: "CDeviceIDLibraries", dependencies: ["CDeviceIDSystem"]),
        // tpm-facts.tsv: the TPM's facts, which scripts/gen-tpm writes into include/dids_tpm_facts.h.
        .target(name: "CDeviceIDTPM", dependencies: ["CDeviceIDLibraries", "CDeviceIDSystem"], exclude: ["tpm-facts.tsv"]),
        .target(name: "CDeviceIDFastPaths", cSettings: [.headerSearchPath("../../include")]),
        .systemLibrary(name: "CDeviceIDAPI"),
        .target(
            name: "DeviceID",
            // CDeviceIDAPI for the sizes the header owns (DEVICEID_NAME_MAX, DEVICEID_SECRET_MAX).
            dependencies: ["CDeviceIDLibc", "CDeviceIDSystem", "CDeviceIDPrimitives", "CDeviceIDLibraries", "CDeviceIDTPM",
                           "CDeviceIDAPI"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "DeviceIDC",
            dependencies: ["DeviceID", "CDeviceIDAPI", "CDeviceIDLibc", "CDeviceIDPrimitives", "CDeviceIDFastPaths",
                           "CDeviceIDSystem"],
            exclude: ["exports.map"],
            swiftSettings: swiftSettings,
            linkerSettings: (embedded ? [.linkedLibrary("m")] : []) + [
                .unsafeFlags(embeddedLinking + [
                    "-Xlinker", "-soname=libdeviceid.so.2",
                    "-Xlinker", "--version-script=\(root)/Sources/DeviceIDC/exports.map",
                ])
            ]
        ),
        .executableTarget(
            name: "DeviceIDCLI",
            dependencies: ["DeviceID", "CDeviceIDLibc", "CDeviceIDCLI"],
            swiftSettings: swiftSettings,
            linkerSettings: embedded ? [.linkedLibrary("m"), .unsafeFlags(embeddedLinking)] : []
        ),
        .executableTarget(name: "DeviceIDExample", dependencies: ["DeviceID"], path: "examples/swift"),
        .executableTarget(name: "DeviceIDFuzzParsers", dependencies: ["DeviceID"], path: "Tests/fuzz/parsers"),
        .testTarget(name: "DeviceIDTests", dependencies: ["DeviceID", "CDeviceIDAPI"]),
    ]
)
