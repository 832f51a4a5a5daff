// swift-tools-version:6.1
// assetd: a file-asset lifecycle manager for Linux. One module per job, dependencies point
// down, and nothing below AssetDaemon knows an event loop exists. Bottom to top, each line
// says what a module holds and, after "on", what it builds on (not repeating what those bring):
//
//   JSON             the JSON value, its parser and writer, exact numbers, JSON paths. On nothing.
//   CWALCoalesce     C: the WAL write-combining VFS for SQLite. On libsqlite3.
//   CFileIdentity    C: statx and the inode generation for file identities. On libc.
//   CQueryTemp       C: the VFS and allocator that bound a query's temporary files and memory. On libsqlite3.
//   CSideFiles       C: the guard on SQLite's opens and chowns of a database's -wal, -shm, -journal. On libsqlite3.
//   AssetStore       the engine: objects, edges and delete rules, templates, the file registry
//                    and unlink queue, indexes and queries, policies, verify and backup.
//                    On JSON (re-exported: its API speaks JSON values), GRDB, CWALCoalesce,
//                    CFileIdentity, CQueryTemp, CSideFiles.
//   ControlProtocol  the wire: line framing, JSON-RPC requests, replies and events, and the
//                    error codes clients see. On JSON.
//   AssetService     the methods: MethodTable and Methods/ (one file per method), Params, the
//                    one mapping of engine errors to wire errors, LocalInvoker (assetctl --db),
//                    the config model (DaemonConfig, ConfigParser, ControlLimits, root hygiene,
//                    who is an admin). On AssetStore, ControlProtocol, TOMLKit.
//   CUV, EventLoop   libuv, and its Swift face (Loop, Timer, PipeListener, PipeStream, Work,
//                    Waker); EventLoop is CUV's only importer.
//   AssetDaemon      the wiring: Daemon, ControlServer, Session, PutPipeline (group commit),
//                    QueryLane, events, threads. On AssetService (re-exported), EventLoop, swift-log.
//   AssetClient      a small blocking client for the socket, linking no SQLite. On ControlProtocol, JSON.
//   AssetctlText     assetctl's text: argument words to params (CLIParams), replies to tables
//                    and listings (Formatting), stats to Prometheus. On JSON.
//   assetd           the daemon's command line and its logger. On AssetDaemon, ArgumentParser, swift-log.
//   assetctl         the CLI, one file per subcommand under Commands/. On AssetClient (socket),
//                    AssetService (--db, config, the engine's units and paths), AssetctlText,
//                    ArgumentParser; never EventLoop.
//   assetbench       the benchmarks of scripts/bench.sh. On AssetStore, CFileIdentity (the
//                    baseline identifies files as the engine does), EventLoop, GRDBSQLite.
//   FuzzTargets      libFuzzer entry points (request line, config, query clause), driven by
//                    assetfuzz. On ControlProtocol, AssetService.
// Tests: a target per module (the engine's split by concern: AssetStoreTests, FileLifecycleTests,
// IndexTests), DaemonTests driving the built assetd and assetctl, Tests/Support
// (AssetStoreTestSupport), the store fixture the engine's suites share, and Tests/CTestFuse, a
// FUSE server in C that never answers, for FileLifecycleTests.
import PackageDescription

let package = Package(
    name: "assetd",
    products: [
        .library(name: "AssetStore", targets: ["AssetStore"]),
        .library(name: "AssetClient", targets: ["AssetClient"]),
        .executable(name: "assetd", targets: ["assetd"]),
        .executable(name: "assetctl", targets: ["assetctl"]),
    ],
    // Package.resolved is not committed, so the pins are here: each dependency up to its next
    // minor version (a fix comes in, an API change does not), and TOMLKit, before 1.0 where a
    // minor version may break, exactly.
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", .upToNextMinor(from: "7.10.0")),
        .package(url: "https://github.com/x-sheep/swift-property-based", .upToNextMinor(from: "2.0.1")),
        .package(url: "https://github.com/apple/swift-argument-parser", .upToNextMinor(from: "1.8.2")),
        .package(url: "https://github.com/apple/swift-log", .upToNextMinor(from: "1.16.2")),
        .package(url: "https://github.com/LebJe/TOMLKit", exact: "0.6.0"),
    ],
    targets: [
        .target(name: "JSON"),
        .target(
            name: "CWALCoalesce",
            linkerSettings: [.linkedLibrary("sqlite3")]),
        .target(name: "CFileIdentity"),
        .target(
            name: "CQueryTemp",
            linkerSettings: [.linkedLibrary("sqlite3")]),
        .target(
            name: "CSideFiles",
            linkerSettings: [.linkedLibrary("sqlite3")]),
        .target(
            name: "AssetStore",
            dependencies: [
                "JSON", "CWALCoalesce", "CFileIdentity", "CQueryTemp", "CSideFiles",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]),
        .target(
            name: "ControlProtocol",
            dependencies: ["JSON"]),
        .target(
            name: "AssetService",
            dependencies: ["AssetStore", "ControlProtocol", .product(name: "TOMLKit", package: "TOMLKit")]),
        .systemLibrary(
            name: "CUV",
            pkgConfig: "libuv",
            providers: [.apt(["libuv1-dev"])]),
        .target(
            name: "EventLoop",
            dependencies: ["CUV"]),
        .target(
            name: "AssetDaemon",
            dependencies: [
                "AssetService", "AssetStore", "ControlProtocol", "EventLoop",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .target(
            name: "AssetClient",
            dependencies: ["ControlProtocol", "JSON"]),
        .target(
            name: "AssetctlText",
            dependencies: ["JSON"]),
        .executableTarget(
            name: "assetd",
            dependencies: [
                "AssetDaemon", "ControlProtocol",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .executableTarget(
            name: "assetctl",
            dependencies: [
                "AssetService", "AssetStore", "AssetClient", "AssetctlText", "ControlProtocol", "JSON",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        .executableTarget(
            name: "assetbench",
            dependencies: [
                "AssetStore", "CFileIdentity", "EventLoop",
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]),
        .target(
            name: "FuzzTargets",
            dependencies: ["AssetService", "AssetStore", "ControlProtocol"],
            path: "Fuzz/Targets"),
        .executableTarget(
            name: "assetfuzz",
            dependencies: ["FuzzTargets"],
            path: "Fuzz/Driver"),
        .target(
            name: "AssetStoreTestSupport",
            dependencies: ["AssetStore"],
            path: "Tests/Support"),
        .testTarget(
            name: "JSONTests",
            dependencies: ["JSON", .product(name: "PropertyBased", package: "swift-property-based")]),
        .testTarget(
            name: "AssetStoreTests",
            dependencies: [
                "AssetStore", "AssetStoreTestSupport", "CWALCoalesce",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]),
        .target(
            name: "CTestFuse",
            path: "Tests/CTestFuse"),
        .testTarget(
            name: "FileLifecycleTests",
            dependencies: [
                "AssetStore", "AssetStoreTestSupport", "CTestFuse", .product(name: "GRDB", package: "GRDB.swift"),
            ]),
        .testTarget(
            name: "IndexTests",
            dependencies: ["AssetStore", "AssetStoreTestSupport", .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(
            name: "EventLoopTests",
            dependencies: ["EventLoop", "CUV"]),
        .testTarget(
            name: "ControlProtocolTests",
            dependencies: ["ControlProtocol", "JSON"]),
        .testTarget(
            name: "AssetClientTests",
            dependencies: ["AssetClient", "AssetctlText", "ControlProtocol", "JSON"]),
        .testTarget(
            name: "FuzzTests",
            dependencies: ["FuzzTargets"]),
        .testTarget(
            name: "DaemonTests",
            dependencies: [
                "AssetClient", "AssetctlText", "ControlProtocol", "AssetStore", "AssetService", "AssetDaemon",
                "AssetStoreTestSupport",
            ]),
    ],
    swiftLanguageModes: [.v6]
)
