// The files SQLite opens beside a database (`-wal`, `-shm`, a copy's `-journal`) when root runs
// `assetctl --db` on a store a `User=` daemon owns (assetctl(1), docs/DESIGN.md §6): that
// user may hard-link another file there under those names; SQLite, as root, gave such a file
// to the database's owner and wrote over it. Now it refuses to open one with another name.

import AssetService
import AssetStore
import AssetStoreTestSupport
import Foundation
import Glibc
import Testing

@Suite(.enabled(if: getuid() == 0, "needs root, to act as root on another user's store"))
struct SideFileLinkTests {
    /// The daemon's user, and the user whose file it links: uids with no passwd entry.
    static let daemonUID: UInt32 = 47_101
    static let otherUID: UInt32 = 47_102
    static let content = "a file of another user, which the daemon's user may link\n"

    /// A store as a `User=` daemon leaves it: closed, its folder and files the daemon user's.
    /// With `copy`, a backup copy (rollback journal) lies in that folder too, made before.
    func foreignStore(copy: Bool = false) throws -> (f: Fixture, config: String) {
        #expect(getpwuid(Self.daemonUID) == nil && getpwuid(Self.otherUID) == nil)
        let f = try Fixture()
        try f.put([(ref("c", "o"), ["n": 1])])
        f.store.close()
        let config = try BackupRestoreTests.config(f)
        if copy {
            let r = try runProcess(
                Binaries.assetctl, ["--db", f.dbPath, "--config", config, "backup", f.dir + "/state/backup.sqlite"])
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        }
        let state = f.dir + "/state"
        #expect(chmod(f.dir, 0o755) == 0)
        for name in try FileManager.default.contentsOfDirectory(atPath: state) + [""] {
            #expect(chown(state + "/" + name, Self.daemonUID, Self.daemonUID) == 0)
        }
        #expect(chmod(state, 0o700) == 0)
        return (f, config)
    }

    /// Another user's file, outside the state folder, hard-linked into it at `name`.
    func plant(_ f: Fixture, at name: String) throws -> String {
        let victim = f.dir + "/victim"
        try Self.content.write(toFile: victim, atomically: false, encoding: .utf8)
        #expect(chown(victim, Self.otherUID, Self.otherUID) == 0)
        #expect(chmod(victim, 0o660) == 0)
        unlink(name)  // one the store's close left, which the folder's owner may remove
        #expect(link(victim, name) == 0)
        return victim
    }

    func expectUntouched(_ victim: String, after what: String) {
        var st = stat()
        #expect(stat(victim, &st) == 0)
        #expect(st.st_uid == Self.otherUID && st.st_gid == Self.otherUID, "\(what): given to uid \(st.st_uid)")
        #expect((try? String(contentsOfFile: victim, encoding: .utf8)) == Self.content, "\(what): written")
    }

    @Test(
        "root's assetctl --db refuses a hard-linked -wal or -shm: never chown'd nor written",
        arguments: ["-wal", "-shm"])
    func linkedSideFile(suffix: String) throws {
        let (f, config) = try foreignStore()
        let name = f.dbPath + suffix
        let victim = try plant(f, at: name)
        for command in [["get", "c", "o"], ["stats"], ["verify"], ["backup", f.dir + "/copy.sqlite"], ["restore"]] {
            let r = try runProcess(Binaries.assetctl, ["--db", f.dbPath, "--config", config] + command)
            #expect(r.status == 1, "\(command): \(r.stdout)\(r.stderr)")
            // A restore may be refused before the open: a -wal beside the file (assetctl(1), restore).
            let refusedFirst = command == ["restore"] && r.stderr.contains("nothing restored")
            #expect(r.stderr.contains("\(name) has 2 names (hard links)") || refusedFirst, "\(command): \(r.stderr)")
            expectUntouched(victim, after: "\(command)")
        }
        // Once the link is gone the store opens, and what root creates is the daemon user's.
        #expect(unlink(name) == 0)
        let r = try runProcess(Binaries.assetctl, ["--db", f.dbPath, "--config", config, "get", "c", "o"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        expectUntouched(victim, after: "unlinked")
    }

    @Test("root's assetctl --db on a backup copy refuses a hard-linked -journal beside it")
    func linkedJournal() throws {
        let (f, config) = try foreignStore(copy: true)
        let copy = f.dir + "/state/backup.sqlite"
        let victim = try plant(f, at: copy + "-journal")
        for command in [["get", "c", "o"], ["put", "c", "p", #"{"n":2}"#], ["restore"]] {
            let r = try runProcess(Binaries.assetctl, ["--db", copy, "--config", config] + command)
            #expect(r.status == 1, "\(command): \(r.stdout)\(r.stderr)")
            // A restore of a file not at store.path is refused before the open (assetctl(1), restore).
            let refusedFirst = command == ["restore"] && r.stderr.contains("nothing restored")
            #expect(r.stderr.contains("-journal has 2 names (hard links)") || refusedFirst, "\(command): \(r.stderr)")
            expectUntouched(victim, after: "\(command)")
        }
    }

    @Test("a -shm with one name but another user's is not given to the database's owner")
    func otherUsersSideFileKeepsOwner() throws {
        let (f, config) = try foreignStore()
        // Its only name in the folder (moved there by the folder's owner): written over, as
        // the owner could remove it anyway, but not handed over with whatever it held.
        let victim = try plant(f, at: f.dbPath + "-shm")
        let fd = open(victim, O_RDONLY | O_CLOEXEC)
        defer { close(fd) }
        #expect(unlink(victim) == 0)
        let local = try LocalInvoker(databasePath: f.dbPath, configPath: config)
        _ = try local.call("object.put", ["collection": "c", "key": "p", "value": ["n": 2]])
        var st = stat()
        #expect(fstat(fd, &st) == 0)
        #expect(st.st_uid == Self.otherUID, "given to uid \(st.st_uid)")
        local.close()
    }
}
