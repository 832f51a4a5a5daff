// swift-tools-version:6.1
// assetd: a file-asset lifecycle manager. Module layout follows STYLE.md: dependencies point
// down, and nothing below the daemon knows an event loop exists.
import PackageDescription

let package = Package(
    name: "assetd",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "AssetStore", targets: ["AssetStore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
    ],
    targets: [
        .systemLibrary(
            name: "CUV",
            pkgConfig: "libuv",
            providers: [.apt(["libuv1-dev"])]),
        .target(
            name: "AssetStore",
            dependencies: [.product(name: "GRDB", package: "GRDB.swift")]),
        .executableTarget(
            name: "assetbench",
            dependencies: [
                "AssetStore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]),
        .target(
            name: "AssetStoreTestSupport",
            dependencies: ["AssetStore"],
            path: "Tests/Support"),
        .testTarget(
            name: "AssetStoreTests",
            dependencies: [
                "AssetStore", "AssetStoreTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]),
        .testTarget(
            name: "FileLifecycleTests",
            dependencies: ["AssetStore", "AssetStoreTestSupport", .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(
            name: "IndexTests",
            dependencies: ["AssetStore", "AssetStoreTestSupport", .product(name: "GRDB", package: "GRDB.swift")]),
    ],
    swiftLanguageModes: [.v6]
)
