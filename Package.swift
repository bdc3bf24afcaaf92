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

/// Compiler settings of the Swift targets that go into libdeviceid and the CLI. Besides -Osize,
/// measured on the stripped library (docs/PERFORMANCE.md, its size row): LLVM's machine outliner (-12 KB)
/// and the SIL inliner's benefit for a caller divided by 64 rather than -Osize's 2 (-12 KB; a
/// threshold of 0 instead costs +66 KB: inlining small functions is what lets the rest fold).
let swiftSettings: [SwiftSetting] = embedded
    ? [.enableExperimentalFeature("Embedded"), .unsafeFlags([
        "-wmo", "-Osize", "-Xcc", "-fPIC", "-Xfrontend", "-function-sections", "-Xllvm", "-enable-machine-outliner",
        "-Xfrontend", "-sil-inline-caller-benefit-reduction-factor", "-Xfrontend", "64",
    ])]
    : []

/// The C targets' code in the same products: for size, and a section per function and object so
/// that --gc-sections drops what nothing calls (-8 KB).
let cSettings: [CSetting] = embedded ? [.unsafeFlags(["-Os", "-ffunction-sections", "-fdata-sections"])] : []

/// What a linked Embedded product needs besides libc: the Unicode tables String comparison uses
/// (from the toolchain's embedded directory), and unused sections dropped. Linked by the
/// toolchain's lld on every architecture (gold left 9 KB that lld's --gc-sections drops), which
/// also folds identical functions (--icf=all, -10 KB with -O2's merged strings; no code here
/// compares function addresses). scripts/swift-embedded adds packed relative relocations where the
/// target's glibc has them.
let embeddedLinking: [String] = embedded
    ? ["-use-ld=lld", "-Xlinker", "--icf=all", "-Xlinker", "-O2",
       "-Xlinker", "-lswiftUnicodeDataTables", "-Xlinker", "--gc-sections"]
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
        .target(name: "CDeviceIDLibc", cSettings: cSettings),
        .target(name: "CDeviceIDCLI", cSettings: cSettings),
        // Its swift_once (fork_aware_once.c) replaces the Embedded standard library's weak one.
        .target(name: "CDeviceIDSystem", cSettings: cSettings + (embedded ? [.define("DEVICEID_EMBEDDED")] : [])),
        .target(name: "CDeviceIDPrimitives", cSettings: cSettings),
        .target(name: "CDeviceIDLibraries", dependencies: ["CDeviceIDSystem"], cSettings: cSettings),
        // tpm-facts.tsv: the TPM's facts, which scripts/gen-tpm writes into include/dids_tpm_facts.h.
        .target(name: "CDeviceIDTPM", dependencies: ["CDeviceIDLibraries", "CDeviceIDSystem"], exclude: ["tpm-facts.tsv"], cSettings: cSettings),
        .target(name: "CDeviceIDFastPaths", cSettings: cSettings + [.headerSearchPath("../../include")]),
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
