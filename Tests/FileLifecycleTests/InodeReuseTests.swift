// I1 when a queued file is removed and another is written at its path before the sweep: the
// filesystem may give the new file the old inode number (ext4 does at once), so (device,
// inode) alone cannot tell them apart. The birth time, the inode generation, or (where the
// filesystem has neither) ctime and size recorded at registration must.

import Foundation
import GRDB
import Glibc
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct InodeReuseTests {
    /// Queues `path` (held by `c/k`, then deleted) in a store with a one-second unlink delay.
    func queue(_ f: Fixture, _ path: String) throws {
        try f.hold(path, key: "k")
        try f.delete(ref("c", "k"))
    }

    @Test("a file removed and written again at its queued path is kept, inode number reused or not: 30 trials")
    func recreatedAtPath() throws {
        let f = try Fixture { $0.unlinkDelay = 1 }
        var reused = 0
        var removedNew = [Int]()
        for trial in 0..<30 {
            let path = try f.makeFile("a/p.bin", size: 10)
            let old = try #require(onDisk(path))
            try queue(f, path)
            // Another program: rm P, write a new P.
            #expect(unlink(path) == 0)
            try writeFile(path, size: 10)
            let new = try #require(onDisk(path))
            if new.inode == old.inode { reused += 1 }
            f.clock.advance(2)
            let r = try f.store.sweep()
            if !f.exists(path) { removedNew.append(trial) }
            #expect(r.unlinked.isEmpty && r.skipped.map(\.reason) == [.identityChanged], "trial \(trial): \(r.skipped)")
            // Out of the way for the next trial, as its owner would.
            _ = unlink(path)
        }
        #expect(
            removedNew.isEmpty, "the new file was unlinked in trials \(removedNew) (inode reused in \(reused) of 30)")
    }

    /// A queue row changed as a file with the same device and inode but another history
    /// would read, and whether the file must then be unlinked.
    struct Recorded: Sendable, CustomTestStringConvertible {
        var what: String
        var set: String
        var unlinked: Bool
        var testDescription: String { what }
    }

    // The file itself stays: only what was recorded differs, as for a new file given the old
    // number (which the loop above meets for real where the filesystem reuses numbers).
    static let recorded: [Recorded] = [
        Recorded(what: "another birth time", set: "birth = COALESCE(birth, 0) + 1", unlinked: false),
        Recorded(what: "another generation", set: "generation = COALESCE(generation, 0) + 1", unlinked: false),
        Recorded(what: "ctime alone, the same", set: "birth = NULL, generation = NULL", unlinked: true),
        Recorded(
            what: "ctime alone, another", set: "birth = NULL, generation = NULL, ctime = ctime - 1", unlinked: false),
        Recorded(
            what: "ctime alone, another size", set: "birth = NULL, generation = NULL, size = size + 1", unlinked: false),
        Recorded(
            what: "nothing but device and inode (a row from before)",
            set: "birth = NULL, generation = NULL, ctime = NULL",
            unlinked: true),
    ]

    @Test(
        "same device and inode: the birth time, generation or (without them) ctime and size decide", arguments: recorded
    )
    func recordedIdentityDecides(_ r: Recorded) throws {
        let f = try Fixture()
        let path = try f.makeFile("a/p.bin", size: 10)
        try queue(f, path)
        try f.damage("UPDATE unlink_queue SET \(r.set)")
        let report = try f.store.sweep()
        if r.unlinked {
            #expect(report.unlinked == [path] && report.skipped.isEmpty, "\(report.skipped)")
        } else {
            #expect(report.unlinked.isEmpty && report.skipped.map(\.reason) == [.identityChanged])
            #expect(f.exists(path))
            #expect(try f.store.counters()["skipped_identity_changed"] == 1)
        }
    }

    @Test("what tells the file apart is recorded at registration and copied to the queue")
    func recordedAtRegistration() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/p.bin", size: 10)
        try f.hold(path, key: "k")
        let registered = try f.store.read { r in
            try Row.fetchOne(r.db, sql: "SELECT birth, generation, ctime FROM file")
        }
        // ctime always; birth time and generation where the filesystem has them (ext4 both).
        #expect(registered?["ctime"] as Int64? != nil)
        try f.delete(ref("c", "k"))
        let queued = try f.store.read { r in
            try Row.fetchOne(r.db, sql: "SELECT birth, generation, ctime FROM unlink_queue")
        }
        #expect(queued == registered)
    }

    /// What a cache writer may do to its own file between registering it and deleting its object.
    enum Use: String, CaseIterable, Sendable {
        case read, mtimeSet, appended, chmodded
    }

    /// Whether the temp folder's filesystem reports a birth time or generation: where it
    /// reports neither, ctime decides, and a chmod-ed or grown file is kept by design.
    static let tempFolderTellsFilesApart: Bool = {
        let path = NSTemporaryDirectory() + "/assetd-stamp-probe-\(getpid())"
        guard FileManager.default.createFile(atPath: path, contents: Data([1])) else { return false }
        defer { unlink(path) }
        guard let roots = try? ManagedRoots([NSTemporaryDirectory()]),
            let stamp = FileProbe.identity(path: path, root: NSTemporaryDirectory(), roots: roots)?.stamp
        else { return false }
        return stamp.birth != nil || stamp.generation != nil
    }()

    @Test(
        "a registered file that was read, had its mtime set, grew or was chmod-ed is still unlinked",
        .enabled(if: tempFolderTellsFilesApart, "the temp folder's filesystem reports no birth time or generation"),
        arguments: Use.allCases)
    func sameFileUnlinked(use: Use) throws {
        let f = try Fixture()
        let path = try f.makeFile("a/p.bin", size: 10)
        try f.hold(path, key: "k")
        switch use {
        case .read: _ = try Data(contentsOf: URL(fileURLWithPath: path))
        case .mtimeSet: try setModificationTime(path, 1_600_000_000)
        case .appended: try grow(path, by: 5)
        case .chmodded: #expect(chmod(path, 0o600) == 0)
        }
        try f.delete(ref("c", "k"))
        let r = try f.store.sweep()
        #expect(r.unlinked == [path] && r.skipped.isEmpty, "\(use): \(r.skipped)")
        #expect(!f.exists(path))
    }
}
