// swift-tools-version:6.1
// assetd: a file-asset lifecycle manager. Module layout follows STYLE.md: dependencies point
// down, and nothing below the daemon knows an event loop exists.
import PackageDescription

let package = Package(
    name: "assetd",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "AssetStore", targets: ["AssetStore"]),
        .library(name: "AssetClient", targets: ["AssetClient"]),
        .executable(name: "assetd", targets: ["assetd"]),
        .executable(name: "assetctl", targets: ["assetctl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CUV",
            pkgConfig: "libuv",
            providers: [.apt(["libuv1-dev"])]),
        .target(
            name: "EventLoop",
            dependencies: ["CUV"]),
        .target(name: "JSON"),
        .target(
            name: "CWALCoalesce",
            linkerSettings: [.linkedLibrary("sqlite3")]),
        .target(name: "CFileIdentity"),
        .target(
            name: "AssetStore",
            dependencies: ["JSON", "CWALCoalesce", "CFileIdentity", .product(name: "GRDB", package: "GRDB.swift")]),
        .target(
            name: "ControlProtocol",
            dependencies: ["JSON"]),
        .target(
            name: "AssetService",
            dependencies: ["AssetStore", "ControlProtocol", .product(name: "TOMLKit", package: "TOMLKit")]),
        .target(
            name: "AssetDaemon",
            dependencies: [
                "AssetService", "AssetStore", "ControlProtocol", "EventLoop",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]),
        .target(
            name: "AssetClient",
            dependencies: ["ControlProtocol", "JSON"]),
        .target(
            name: "AssetctlText",
            dependencies: ["JSON"]),
        .executableTarget(
            name: "assetd",
            dependencies: ["AssetDaemon", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        .executableTarget(
            name: "assetctl",
            dependencies: [
                "AssetService", "AssetStore", "AssetClient", "AssetctlText", "ControlProtocol", "JSON",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        .executableTarget(
            name: "assetbench",
            dependencies: [
                "AssetStore", "EventLoop",
                .product(name: "GRDB", package: "GRDB.swift"),
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
        .testTarget(
            name: "FileLifecycleTests",
            dependencies: ["AssetStore", "AssetStoreTestSupport", .product(name: "GRDB", package: "GRDB.swift")]),
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
