// The store's own files (database, write-ahead log, lock, reserve) seen below a root under
// another name: the database's folder bind-mounted from a folder inside a root, or a hard
// link. The config checks refuse the bind mount at start (assetd.toml(5), files.roots); the
// put and the unlinker refuse such a file by device and inode all the same, the last guard.

import Foundation
import Glibc
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct StoreFileAliasTests {
    @Test("a put naming the database or its WAL through a hard link below a root is refused: unsafe_path")
    func hardLinkedStoreFiles() throws {
        let f = try Fixture()
        try f.put([(ref("c", "before"), ["a": 1])])
        for suffix in ["", "-wal", ".lock"] {
            let alias = f.root + "/alias" + suffix
            guard link(f.dbPath + suffix, alias) == 0 else { throw SetupFailed(what: "link: errno \(errno)") }
            #expect(expectCode(.unsafePath) { try f.hold(alias, key: "evil") } != nil, "\(alias) was registered")
            #expect(unlink(alias) == 0)
        }
        #expect(try !f.exists(ref("c", "evil")))
        #expect(try f.exists(ref("c", "before")))
    }

    @Test("the unlinker never removes one of the store's own files, whatever name a queued row gives it")
    func unlinkerKeepsStoreFiles() throws {
        let f = try Fixture()
        try f.put([(ref("c", "before"), ["a": 1])])
        let alias = f.root + "/alias-wal"
        guard link(f.dbPath + "-wal", alias) == 0 else { throw SetupFailed(what: "link: errno \(errno)") }
        let seen = try #require(onDisk(alias))
        let outcome = SafeUnlinker(roots: f.store.roots, own: f.store.ownFileIDs()).unlink(
            path: alias, root: f.root, device: seen.device, inode: seen.inode)
        #expect(outcome == .unsafePath)
        #expect(f.exists(alias) && f.exists(f.dbPath + "-wal"))
        #expect(unlink(alias) == 0)
    }

    @Test(
        "the database's folder bind-mounted from inside a root: a put naming the database or its WAL is refused",
        .enabled(if: canMount, "bind mounts need CAP_SYS_ADMIN"))
    func boundStoreFolder() throws {
        let f = try Fixture()
        f.store.close()
        // The layout of an fstab `bind` line: the state folder is a folder of the cache disk.
        let inRoot = f.root + "/st"
        let bound = f.dir + "/statebind"
        for d in [inRoot, bound] {
            try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        }
        guard mount(inRoot, bound, nil, UInt(MS_BIND), nil) == 0 else {
            throw SetupFailed(what: "mount --bind: errno \(errno)")
        }
        defer { umount2(f.dir + "/statebind", Int32(MNT_DETACH)) }  // names the fixture: it outlives the mount
        let store = try Store(path: bound + "/assetd.sqlite", configuration: f.configuration)
        defer { store.close() }
        try store.write { tx in try tx.put(ref("c", "before"), value: ["a": 1]) }
        for name in ["assetd.sqlite", "assetd.sqlite-wal"] {
            let refused = expectCode(.unsafePath) {
                try store.write { tx in try tx.put(ref("evil", name), value: ["file": .string(inRoot + "/" + name)]) }
            }
            #expect(refused != nil, "\(name) was registered")
        }
        _ = try store.sweep()
        #expect(f.exists(inRoot + "/assetd.sqlite") && f.exists(inRoot + "/assetd.sqlite-wal"))
        #expect(try store.read { try $0.exists(ref("c", "before")) })
        #expect(try !store.read { try $0.exists(ref("evil", "assetd.sqlite")) })
    }
}
