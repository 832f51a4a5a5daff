// verify, backup and vacuum (assetd(8), CONTROL PROTOCOL, Methods; assetctl(1), COMMANDS). Damage
// that the engine never makes itself (an unreferenced registry row, a dangling edge, a wrong
// index row) is written with a separate SQLite connection on the store's file; missing files and
// orphans are made on the real disk.

import Foundation
import GRDB
import Glibc
import Synchronization
import Testing
import AssetStore
import AssetStoreTestSupport

extension Fixture {
    /// Runs SQL on the store's database through a connection of its own (the engine never
    /// writes such damage).
    func damage(_ sql: String, _ arguments: StatementArguments = []) throws {
        let q = try DatabaseQueue(path: dbPath)
        defer { try? q.close() }
        try q.write { db in try db.execute(sql: sql, arguments: arguments) }
    }

    /// verify with the given switches.
    func verify(
        repair: Bool = false, orphans: Bool = false, deleteOrphans: Bool = false, limit: Int = 10_000,
        progress: (@Sendable (VerifyProgress) -> Void)? = nil
    ) throws -> VerifyReport {
        var o = VerifyOptions()
        o.repair = repair
        o.orphans = orphans
        o.deleteOrphans = deleteOrphans
        o.limit = limit
        if deleteOrphans { tagRoots() }
        return try store.verify(o, progress: progress)
    }
}

extension VerifyReport {
    /// The problems of one kind.
    func of(_ kind: String) -> [VerifyProblem] { problems.filter { $0.kind == kind } }
}

/// The object id of `r` read straight from the database (for writing damage).
private let objectID = "(SELECT id FROM object WHERE collection = ? AND key = ?)"

@Suite struct VerifyTests {
    /// A store with a bit of everything and nothing wrong.
    static func healthy(_ configure: (inout StoreConfiguration) -> Void = { _ in }) throws -> Fixture {
        let f = try Fixture { c in
            c.indexes = [
                IndexDefinition(
                    name: "media", version: "1",
                    columns: [IndexColumn(name: "duration", type: .real, path: JSONPath("duration")!)])
            ]
            configure(&c)
        }
        let a = try f.makeFile("a.bin", size: 100)
        let b = try f.makeFile("sub/b.bin", size: 200)
        try f.put([(ref("c", "1"), ["file": .string(a), "duration": 1.5]), (ref("c", "2"), ["file": .string(b)])])
        try f.store.write { tx in
            try tx.put(ref("album", "x"), value: ["title": "x"])
            try tx.addEdge(
                name: "has", source: ref("album", "x"), destination: .object(ref("c", "1")),
                rules: .notifyIfDestinationDeleted)
            try tx.addEdge(
                name: "cover", source: ref("album", "x"), destination: .file(b),
                rules: .deleteDestinationIfAllSourcesDeleted)
        }
        return f
    }

    @Test("a healthy store is clean, with or without repair and orphans, and verify writes nothing")
    func healthyIsClean() throws {
        let f = try VerifyTests.healthy()
        let before = try f.store.read { try $0.lastCommit() }
        for (repair, orphans) in [(false, false), (true, false), (true, true)] {
            let r = try f.verify(repair: repair, orphans: orphans)
            #expect(r.problems.isEmpty, "\(r.json)")
            #expect(r.clean && r.found == 0 && r.repaired == 0)
            #expect(r.commit == nil)
            #expect(r.json == ["problems": [], "found": 0, "repaired": 0, "clean": true])
        }
        #expect(try f.store.read { try $0.lastCommit() } == before)
    }

    @Test("every phase reports progress, ending with everything done")
    func progress() throws {
        let f = try VerifyTests.healthy()
        try f.damage("INSERT INTO file (path, size, missing, first_seen) VALUES (?, 0, 1, 0)", [f.root + "/stray"])
        let log = Mutex<[VerifyProgress]>([])
        _ = try f.verify(orphans: true) { p in log.withLock { $0.append(p) } }
        let all = log.withLock { $0 }
        let phases = all.map(\.phase).reduce(into: [String]()) { if $0.last != $1 { $0.append($1) } }
        #expect(
            phases == [
                "dangling_edges", "missing_files", "unreferenced_files", "indexes", "shared_files", "unlink_queue",
                "orphans",
            ])
        for phase in phases.dropLast() {
            let last = try #require(all.last { $0.phase == phase })
            #expect(last.total == last.done, "\(phase)")
        }
        #expect(all.last { $0.phase == "indexes" }?.done == 3 * 2)  // three objects, two indexes
    }

    @Test("verify holds no transaction between pages: a client write from inside its progress callback goes through")
    func writesBetweenPages() throws {
        let f = try VerifyTests.healthy()
        try f.damage("UPDATE object SET size = 5 WHERE key = '2'")
        let store = f.store!
        let writes = Mutex(0)
        let failures = Mutex<[String]>([])
        let r = try f.verify(repair: true, orphans: true) { p in
            do {
                try store.write { tx in try tx.put(ref("client", "\(p.phase)-\(p.done)"), value: [:]) }
                writes.withLock { $0 += 1 }
            } catch {
                failures.withLock { $0.append("\(p.phase): \(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        #expect(writes.withLock { $0 } >= 6)
        #expect(r.found == 1 && r.clean)
        #expect(try f.verify().clean)
    }

    // MARK: missing files

    @Test(
        "a file gone from disk is reported per holder; repair removes its edges as destination deleted and rules fire")
    func missingFile() throws {
        let f = try VerifyTests.healthy()
        let c = try f.makeFile("c.bin", size: 50)
        try f.store.write { tx in
            try tx.put(ref("thumb", "t"), value: ["of": "c"])
            try tx.addEdge(
                name: "img", source: ref("thumb", "t"), destination: .file(c), rules: .deleteSourceIfDestinationDeleted)
        }
        let b = f.root + "/sub/b.bin"
        unlink(b)
        unlink(c)

        let report = try f.verify()
        let missing = report.of("missing_file")
        #expect(
            Set(missing.map(\.subject)) == [
                ["collection": "c", "key": "2", "path": .string(b)],
                ["collection": "album", "key": "x", "path": .string(b)],
                ["collection": "thumb", "key": "t", "path": .string(c)],
            ])
        #expect(report.found == 3 && !report.clean && missing.allSatisfy { !$0.repaired })
        #expect(report.commit == nil)
        #expect(try f.fileReport(c) != nil, "a report alone changes nothing")

        let fixed = try f.verify(repair: true)
        #expect(fixed.of("missing_file").count == 3 && fixed.clean && fixed.repaired == 3)
        let commit = try #require(fixed.commit)
        #expect(commit.deleted.map(\.ref) == [ref("thumb", "t")] && commit.deleted.allSatisfy { $0.cause == .cascade })
        #expect(commit.edgesRemoved.filter { $0.reason == .destinationDeleted }.count == 3)
        #expect(commit.filesQueued.isEmpty, "a missing file is not queued")
        #expect(try !f.exists(ref("thumb", "t")))
        #expect(try f.exists(ref("c", "2")) && f.exists(ref("album", "x")))
        #expect(try f.fileReport(b) == nil && f.fileReport(c) == nil)
        #expect(try f.indexedSize(key: "2") == .int(0))
        #expect(try f.verify().clean)
    }

    @Test("files under a root deleted whole are not judged: the root is reported missing, its rows kept")
    func rootDeletedWhole() throws {
        let f = try Fixture()
        let a = try f.makeFile("a/one.bin", size: 5)
        try f.hold(a, key: "one")
        try FileManager.default.removeItem(atPath: f.root)
        let report = try f.verify(repair: true)
        #expect(report.of("missing_file").isEmpty)
        #expect(report.of("root_missing").map(\.subject) == [["path": .string(f.root)]])
        #expect(try f.exists(ref("c", "one")))
    }

    @Test("a file referenced before it exists is not missing until the orphan grace has passed since it was first seen")
    func notYetWritten() throws {
        let f = try Fixture()
        try f.hold(f.root + "/download.part", key: "d")
        #expect(try f.verify(repair: true).found == 0)
        f.clock.advance(f.configuration.orphanGrace + 1)
        let r = try f.verify()
        #expect(
            r.of("missing_file").map(\.subject) == [
                ["collection": "c", "key": "d", "path": .string(f.root + "/download.part")]
            ])
    }

    @Test("a leased file that is gone is not reported: the lease's holder is working on it")
    func leasedMissing() throws {
        let f = try Fixture()
        let p = try f.makeFile("x.bin")
        try f.hold(p, key: "x")
        unlink(p)
        let lease = try f.store.leases.acquire(objects: [], files: [p], ttl: 60)
        #expect(try f.verify(repair: true).found == 0)
        _ = f.store.leases.release(lease.id)
        #expect(try f.verify().found == 1)
    }

    @Test("a repair a deny edge refuses is reported unrepaired, and the other repairs of its page still commit")
    func denied() throws {
        let f = try Fixture()
        let p = try f.makeFile("p.bin")
        let q = try f.makeFile("q.bin")
        try f.store.write { tx in
            for (k, path) in [("p", p), ("q", q)] {
                try tx.put(ref("t", k), value: [:])
                try tx.addEdge(
                    name: "img", source: ref("t", k), destination: .file(path), rules: .deleteSourceIfDestinationDeleted
                )
            }
            try tx.put(ref("guard", "g"), value: [:])
            try tx.addEdge(
                name: "keeps", source: ref("guard", "g"), destination: .object(ref("t", "p")),
                rules: .denyDeleteDestination)
        }
        unlink(p)
        unlink(q)
        let r = try f.verify(repair: true)
        #expect(r.found == 2 && r.repaired == 1 && !r.clean)
        let refused = try #require(r.problems.first { !$0.repaired })
        #expect(refused.subject["path"] == .string(p))
        #expect(refused.message.contains("not repaired"))
        #expect(try f.exists(ref("t", "p")) && !f.exists(ref("t", "q")))
    }

    // MARK: unreferenced registry rows

    @Test(
        "an unreferenced registry row is reported; repair queues a file it saw for unlinking and only drops one it never saw"
    )
    func unreferenced() throws {
        let f = try VerifyTests.healthy()
        let seen = try f.makeFile("stray.bin", size: 7)
        let disk = try #require(onDisk(seen))
        let unseen = try f.makeFile("unseen.bin", size: 9)
        try f.damage(
            "INSERT INTO file (path, size, device, inode, mtime, missing, first_seen) VALUES (?, 7, ?, ?, ?, 0, 0)",
            [seen, disk.device, disk.inode, disk.mtime])
        try f.damage(
            "INSERT INTO file (path, size, device, inode, mtime, missing, first_seen) VALUES (?, 0, NULL, NULL, NULL, 1, 0)",
            [unseen])

        let r = try f.verify()
        #expect(Set(r.of("unreferenced_file").map(\.subject)) == [["path": .string(seen)], ["path": .string(unseen)]])
        #expect(r.found == 2 && !r.clean)

        let fixed = try f.verify(repair: true)
        #expect(fixed.clean && fixed.repaired == 2)
        #expect(fixed.commit?.filesQueued == [seen])
        #expect(try f.fileReport(seen) == nil && f.fileReport(unseen) == nil)
        #expect(try f.store.pending().map(\.path) == [seen])
        _ = try f.store.sweep()
        #expect(!f.exists(seen), "queued and unlinked by the ordinary pipeline")
        #expect(f.exists(unseen), "a row that never saw the file unlinks nothing")
        #expect(try f.verify().clean)
    }

    @Test("problems beyond the limit are counted, not listed, across many pages")
    func manyPages() throws {
        let f = try Fixture()
        try f.damage(
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2500)
            INSERT INTO file (path, size, device, inode, mtime, missing, first_seen)
            SELECT ? || '/never/' || i, 0, NULL, NULL, NULL, 1, 0 FROM n
            """, [f.root])
        let r = try f.verify(limit: 100)
        #expect(r.found == 2500 && r.problems.count == 100)
        let fixed = try f.verify(repair: true, limit: 10)
        #expect(fixed.found == 2500 && fixed.repaired == 2500 && fixed.clean)
        #expect(try f.store.statistics().files == 0)
    }

    // MARK: dangling edges

    @Test("edges whose source, destination object or destination file row is gone are reported and removed by repair")
    func dangling() throws {
        let f = try VerifyTests.healthy()
        try f.damage(
            "INSERT INTO edge (name, src, is_file, dst, rules) VALUES ('ghost', 999999, 0, \(objectID), 0)", ["c", "1"])
        try f.damage(
            "INSERT INTO edge (name, src, is_file, dst, rules) VALUES ('to_nothing', \(objectID), 0, 888888, 4)",
            ["c", "2"])
        try f.damage(
            "INSERT INTO edge (name, src, is_file, dst, rules) VALUES ('no_row', \(objectID), 1, 777777, 0)",
            ["c", "2"])
        let r = try f.verify()
        let found = r.of("dangling_edge")
        #expect(found.count == 3 && r.found == 3)
        #expect(
            Set(found.map(\.subject)) == [
                ["name": "ghost", "source": .null, "destination": ["collection": "c", "key": "1"]],
                [
                    "name": "to_nothing", "source": ["collection": "c", "key": "2"],
                    "destination": ["object_id": 888888],
                ],
                ["name": "no_row", "source": ["collection": "c", "key": "2"], "destination": ["file_id": 777777]],
            ])
        let fixed = try f.verify(repair: true)
        #expect(fixed.clean && fixed.repaired == 3)
        #expect(fixed.commit?.deleted.isEmpty == true, "removing a dangling edge fires nothing")
        #expect(try f.exists(ref("c", "1")) && f.exists(ref("c", "2")))
        #expect(try f.verify().clean)
    }

    // MARK: indexes

    @Test("index rows that differ from a recomputation are reported per index and repair rebuilds them")
    func indexMismatch() throws {
        let f = try VerifyTests.healthy()
        // The built-in index's own columns: the rest of its row is the object's.
        try f.damage("UPDATE object SET size = 999 WHERE key = '1'")
        try f.damage("UPDATE object SET files = 7 WHERE key = '2'")
        try f.damage("DELETE FROM index_media")
        let r = try f.verify()
        let found = r.of("index_mismatch")
        #expect(found.map(\.subject) == [["index": "default"], ["index": "media"]])
        #expect(found.first?.message.contains("2 rows differ") == true, "\(found.first?.message ?? "")")
        #expect(try f.indexedSize(key: "1") == .int(999), "a report alone changes nothing")

        let fixed = try f.verify(repair: true)
        #expect(fixed.clean && fixed.repaired == 2)
        #expect(try f.indexedSize(key: "1") == .int(100))
        #expect(try f.store.query(clause: "WHERE files = 7").isEmpty)
        #expect(try f.store.query(index: "media", clause: "WHERE duration = 1.5").map(\.ref) == [ref("c", "1")])
        #expect(try f.verify().clean)
    }

    @Test("indexes of every column type over values of every JSON type agree with their recomputation")
    func indexTypesClean() throws {
        let def = IndexDefinition(
            name: "mixed", version: "1", collections: ["m"],
            columns: [
                IndexColumn(name: "i", type: .integer, path: JSONPath("v")!),
                IndexColumn(name: "r", type: .real, path: JSONPath("v")!),
                IndexColumn(name: "t", type: .text, path: JSONPath("v")!),
                IndexColumn(name: "b", type: .boolean, path: JSONPath("v")!),
            ])
        let f = try Fixture { $0.indexes = [def] }
        let values: [JSONValue] = [1, 2.5, -7.0, "text", true, false, .null, [1], ["k": 1], 1e300]
        try f.store.write { tx in
            for (n, v) in values.enumerated() {
                try tx.put(ref("m", "\(n)"), value: ["v": v], metadata: ["n": .int(Int64(n))])
                try tx.put(ref("other", "\(n)"), value: ["v": v])
            }
        }
        let r = try f.verify()
        #expect(r.clean && r.found == 0, "\(r.json)")
        try f.damage("UPDATE index_mixed SET t = 'x' WHERE key = '3'")
        #expect(try f.verify().of("index_mismatch").map(\.subject) == [["index": "mixed"]])
    }

    // MARK: unlink queue

    @Test("an unlink failing for longer than failingFor is reported and never counts as repaired")
    func unlinkFailing() throws {
        let f = try Fixture()
        let p = try f.makeFile("locked/x.bin")
        try f.hold(p, key: "x")
        let obstacle = try UnlinkObstacle(p, in: f)
        defer { obstacle.remove() }
        try f.delete(ref("c", "x"))
        _ = try f.store.sweep()
        #expect(try f.store.pending().first?.attempts == 1)
        #expect(try f.verify().found == 0, "failing, but not for long")

        f.clock.advance(86_400 + 1)
        let r = try f.verify(repair: true)
        let failing = r.of("unlink_failing")
        #expect(failing.count == 1 && !r.clean && r.repaired == 0)
        #expect(failing.first?.subject["path"] == .string(p))
        #expect(failing.first?.subject["attempts"] == 1)
        var shorter = VerifyOptions()
        shorter.failingFor = 10 * 86_400
        #expect(try f.store.verify(shorter).found == 0)
    }

    // MARK: read-only

    @Test("verify reads a store another process holds; repairing it is busy, as are vacuum and other writes")
    func readOnly() throws {
        let f = try VerifyTests.healthy()
        try f.damage("UPDATE object SET size = 1 WHERE key = '1'")
        var c = f.configuration
        c.readOnly = true
        let other = try Store(path: f.dbPath, configuration: c)
        defer { other.close() }
        var o = VerifyOptions()
        #expect(try other.verify(o).found == 1)
        o.repair = true
        #expect(expectCode(.busy) { try other.verify(o) } != nil)
        var d = VerifyOptions()
        d.deleteOrphans = true
        #expect(expectCode(.busy) { try other.verify(d) } != nil)
        #expect(expectCode(.busy) { try other.vacuum() } != nil)
    }

    @Test("a checkpoint on a store another process holds is busy, not an I/O error")
    func readOnlyCheckpoint() throws {
        let f = try VerifyTests.healthy()
        var c = f.configuration
        c.readOnly = true
        let other = try Store(path: f.dbPath, configuration: c)
        defer { other.close() }
        #expect(expectCode(.busy) { try other.checkpoint() } != nil)
    }
}

@Suite struct OrphanTests {
    /// Sets `path`'s mtime `age` seconds before the fixture's clock.
    static func age(_ f: Fixture, _ path: String, _ age: Double) throws {
        try setModificationTime(path, f.clock.now - age)
    }

    @Test("old unregistered files are orphans only when asked; young ones never, registered and queued ones never")
    func grace() throws {
        let f = try Fixture { $0.unlinkDelay = 3600 }
        let grace = f.configuration.orphanGrace
        let held = try f.makeFile("held.bin")
        try f.hold(held, key: "h")
        let queued = try f.makeFile("queued.bin")
        try f.hold(queued, key: "q")
        try f.delete(ref("c", "q"))  // queued, not yet due
        let old = try f.makeFile("deep/er/old.bin", size: 33)
        let young = try f.makeFile("young.bin")
        for p in [held, queued, old] { try OrphanTests.age(f, p, grace + 10) }
        try OrphanTests.age(f, young, grace - 10)

        #expect(try f.verify().found == 0, "no orphans without the option")
        let r = try f.verify(orphans: true)
        #expect(
            r.of("orphan").map(\.subject) == [
                ["path": .string(old), "size": 33, "mtime": .double(f.clock.now - grace - 10)]
            ])
        #expect(r.found == 1 && !r.clean)

        let removed = try f.verify(orphans: true, deleteOrphans: true)
        #expect(removed.found == 1 && removed.repaired == 1 && removed.clean)
        #expect(!f.exists(old))
        #expect(f.exists(young) && f.exists(held) && f.exists(queued))
        #expect(f.exists(f.root + "/deep/er"), "folders are never removed")

        f.clock.advance(20)  // now young is past the grace
        #expect(try f.verify(orphans: true).of("orphan").map { $0.subject["path"] } == [.string(young)])
    }

    @Test("a leased unregistered file is not an orphan")
    func leased() throws {
        let f = try Fixture()
        let p = try f.makeFile("incoming.bin")
        let lease = try f.store.leases.acquire(objects: [], files: [p], ttl: 60)
        #expect(try f.verify(orphans: true, deleteOrphans: true).found == 0)
        #expect(f.exists(p))
        _ = f.store.leases.release(lease.id)
        #expect(try f.verify(orphans: true).found == 1)
    }

    @Test("symlinks under a root are neither followed nor reported, and nothing they point at is removed")
    func symlinks() throws {
        let f = try Fixture()
        let outside = f.dir + "/outside"
        try FileManager.default.createDirectory(atPath: outside + "/inner", withIntermediateDirectories: true)
        let target = outside + "/inner/victim.bin"
        try writeFile(target)
        try setModificationTime(target, 0)
        try makeSymlink(at: f.root + "/linked-folder", to: outside)
        try makeSymlink(at: f.root + "/linked-file", to: target)
        try makeSymlink(at: f.root + "/dangling", to: f.dir + "/nothing")
        try makeFifo(at: f.root + "/fifo")
        #expect(try f.verify(orphans: true).found == 0)
        let r = try f.verify(orphans: true, deleteOrphans: true)
        #expect(r.found == 0, "\(r.json)")
        #expect(f.exists(target) && onDisk(f.root + "/linked-file")?.isSymlink == true)
    }

    @Test("an orphan under a root nested in another is reported once")
    func nestedRoots() throws {
        let f = try Fixture { $0.roots.append($0.roots[0] + "/inner") }
        let p = try f.makeFile("inner/lost.bin")
        let r = try f.verify(orphans: true)
        #expect(r.of("orphan").map { $0.subject["path"] } == [.string(p)])
    }

    @Test("an orphan whose name is not UTF-8, under a root nested in another, is reported once")
    func nestedRootsNotUTF8() throws {
        let f = try Fixture { $0.roots.append($0.roots[0] + "/inner") }
        try FileManager.default.createDirectory(atPath: f.root + "/inner", withIntermediateDirectories: true)
        let name: [UInt8] = Array((f.root + "/inner/bad-").utf8) + [0xFF, 0xFE, 0]
        let fd = name.withUnsafeBufferPointer { b in
            b.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_CREAT | O_WRONLY | O_CLOEXEC, 0o644) }
        }
        #expect(fd >= 0)
        close(fd)
        let r = try f.verify(orphans: true)
        #expect(r.of("orphan").count == 1, "\(r.json)")
    }

    @Test("an orphan whose name is not UTF-8 is reported but never removed: no path string can name it safely")
    func notUTF8() throws {
        let f = try Fixture()
        let name: [UInt8] = Array((f.root + "/bad-").utf8) + [0xFF, 0xFE, 0]
        let fd = name.withUnsafeBufferPointer { b in
            b.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_CREAT | O_WRONLY | O_CLOEXEC, 0o644) }
        }
        #expect(fd >= 0)
        close(fd)
        let r = try f.verify(orphans: true, deleteOrphans: true)
        #expect(r.found == 1 && r.repaired == 0 && !r.clean)
        #expect(r.problems.first?.message.contains("not UTF-8") == true)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: f.root).filter { $0 != "CACHEDIR.TAG" }.count == 1,
            "still there")
    }

    @Test("an orphan whose name is not UTF-8 is never reported under a registered file's name")
    func notUTF8NotAnotherName() throws {
        let f = try Fixture()
        // A held file named "bad" U+FFFD: what "bad" 0xFF reads as with its invalid byte replaced.
        let held = try f.makeFile("bad\u{FFFD}")
        try f.put([(ref("c", "1"), ["file": .string(held)])])
        let name: [UInt8] = Array((f.root + "/bad").utf8) + [0xFF, 0]
        let fd = name.withUnsafeBufferPointer { b in
            b.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_CREAT | O_WRONLY | O_CLOEXEC, 0o644) }
        }
        #expect(fd >= 0)
        close(fd)
        let orphans = try f.verify(orphans: true).of("orphan")
        #expect(orphans.count == 1)
        #expect(orphans.first?.subject["path"] == nil, "\(orphans)")
        let encoded = f.root.utf8.map { b in
            UInt8(ascii: "a")...UInt8(ascii: "z") ~= b || UInt8(ascii: "A")...UInt8(ascii: "Z") ~= b
                || UInt8(ascii: "0")...UInt8(ascii: "9") ~= b || "-._~/".utf8.contains(b)
                ? String(UnicodeScalar(b)) : "%" + String(b, radix: 16, uppercase: true)
        }.joined()
        #expect(orphans.first?.subject["path_bytes"] == .string(encoded + "/bad%FF"), "\(orphans)")
        #expect(orphans.first?.message.contains("/bad\\xFF (its name is not UTF-8") == true, "\(orphans)")
        #expect(orphans.first?.message.contains(held) == false)
    }

    @Test("the database and its companion files under a root are never orphans")
    func ownFiles() throws {
        // The fixture's folder, which holds the database folder, is the root.
        let f = try Fixture { $0.roots = [($0.roots[0] as NSString).deletingLastPathComponent] }
        try f.store.write { tx in try tx.put(ref("c", "1"), value: [:]) }
        #expect(f.exists(f.dbPath + "-wal"))
        let r = try f.verify(orphans: true, deleteOrphans: true)
        #expect(r.found == 0, "\(r.json)")
        #expect(f.exists(f.dbPath) && f.exists(f.dbPath + ".lock") && f.exists(f.dbPath + ".ballast"))
    }
}

@Suite struct BackupTests {
    @Test("a backup taken while another thread writes is one consistent SQLite file a store opens")
    func consistentUnderWrites() throws {
        let f = try Fixture()
        let big = JSONValue.string(String(repeating: "x", count: 2000))
        // Enough pages for the copy to take many steps while the writer runs.
        try f.store.write { tx in for i in 0..<6000 { try tx.put(ref("seed", "\(i)"), value: ["pad": big]) } }
        let base = try f.store.read { try $0.objectCount() }
        let baseCommit = try f.store.read { try $0.lastCommit() }
        let stop = Atomic<Bool>(false)
        let store = f.store!
        let writer = Thread {
            var i = 0
            while !stop.load(ordering: .relaxed) {
                // Ten objects per commit, so commit n holds exactly 10·(n − base) of them.
                _ = try? store.write { tx in
                    for j in 0..<10 { try tx.put(ref("w", "\(i)-\(j)"), value: ["n": .int(Int64(i))]) }
                }
                i += 1
            }
        }
        writer.start()
        defer { stop.store(true, ordering: .relaxed) }
        while try f.store.read({ try $0.lastCommit() }) < baseCommit + 3 { usleep(1000) }
        let steps = Mutex<[(Int, Int)]>([])
        let path = f.dir + "/backups/copy.sqlite"
        try FileManager.default.createDirectory(atPath: f.dir + "/backups", withIntermediateDirectories: true)
        let seen = Mutex<[Int64]>([])  // the live store's commit at each step of the copy
        let result = try f.store.backup(to: path) { done, total in
            steps.withLock { $0.append((done, total)) }
            if let c = try? store.read({ try $0.lastCommit() }) { seen.withLock { $0.append(c) } }
        }
        stop.store(true, ordering: .relaxed)
        while writer.isExecuting { usleep(1000) }
        let final = try f.store.read { try $0.lastCommit() }

        let commit = try #require(result["commit"]?.intValue)
        #expect(commit > baseCommit && final > commit)
        #expect(seen.withLock { $0.last! > $0.first! }, "the writer committed while the copy was under way")
        #expect(result["path"] == .string(path))
        #expect(result["bytes"]?.intValue == onDisk(path)?.size)
        #expect(steps.withLock { $0.count } > 1)
        #expect(steps.withLock { $0.last.map { $0.0 == $0.1 } } == true)
        let done = steps.withLock { $0.map(\.0) }
        #expect(zip(done, done.dropFirst()).allSatisfy { $0 < $1 }, "progress only goes forward: \(done)")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: f.dir + "/backups") == ["copy.sqlite"],
            "one file, no temp left")

        var c = StoreConfiguration(roots: [f.root])
        c.drainOnOpen = false
        c.opensCopies = true  // marked: a copy until restored
        c.writesCopies = true  // opened to be restored
        let copy = try Store(path: path, configuration: c)
        defer { copy.close() }
        #expect(copy.copyMark == "backup of \(f.dbPath) at commit \(commit)")
        try copy.read { r in
            #expect(try r.lastCommit() == commit)
            #expect(try r.objectCount() == base + 10 * Int(commit - baseCommit))
            let keys = try r.list(collection: "w", limit: 100_000).keys
            #expect(keys.count == 10 * Int(commit - baseCommit))
            #expect(try r.get(ref("seed", "5999"))?.value == ["pad": big])
        }
        #expect(try copy.verify(VerifyOptions()).clean)
        _ = try copy.restore(configuredSource: f.dbPath, force: false)
        try copy.write { tx in try tx.put(ref("after", "restore"), value: [:]) }  // a usable store, not just readable
    }

    @Test("a backup of a quiet store reports its progress step by step and holds everything")
    func quietProgress() throws {
        let f = try Fixture()
        let pad = JSONValue.string(String(repeating: "z", count: 2000))
        try f.store.write { tx in for i in 0..<3000 { try tx.put(ref("q", "\(i)"), value: ["pad": pad]) } }
        let steps = Mutex<[(Int, Int)]>([])
        let result = try f.store.backup(to: f.dir + "/quiet.sqlite") { d, t in steps.withLock { $0.append((d, t)) } }
        let all = steps.withLock { $0 }
        let total = try #require(all.last?.1)
        #expect(all.map(\.0) == Array(stride(from: 1024, to: total, by: 1024)) + [total])
        #expect(all.allSatisfy { $0.1 == total })
        #expect(result["commit"]?.intValue == (try f.store.read { try $0.lastCommit() }))
        var c = StoreConfiguration(roots: [f.root])
        c.readOnly = true
        let copy = try Store(path: f.dir + "/quiet.sqlite", configuration: c)
        defer { copy.close() }
        #expect(try copy.read { try $0.objectCount() } == 3000)
    }

    @Test("a backup refuses an existing path and leaves it untouched")
    func refusesExisting() throws {
        let f = try VerifyTests.healthy()
        let path = f.dir + "/taken"
        try writeFile(path, size: 3)
        let e = expectCode(.conflict) { try f.store.backup(to: path) }
        #expect(e != nil)
        #expect(onDisk(path)?.size == 3)
        #expect(try FileManager.default.contentsOfDirectory(atPath: f.dir).sorted() == ["root", "state", "taken"])
    }

    @Test("a backup removes the temp files killed backups to its name left, and nothing else")
    func removesStaleTemps() throws {
        let f = try Fixture()
        let folder = f.dir + "/backups"
        // Above pid_max: no process has it, ever.
        let pidMax = try String(contentsOfFile: "/proc/sys/kernel/pid_max", encoding: .utf8)
        let dead = try #require(Int32(pidMax.trimmingCharacters(in: .whitespacesAndNewlines))) + 1
        errno = 0
        #expect(kill(dead, 0) == -1 && errno == ESRCH)
        let live = getpid()
        let stale = [
            ".copy.sqlite.tmp-\(dead)-123", ".copy.sqlite.tmp-\(dead)-123-wal", ".copy.sqlite.tmp-\(dead)-9-journal",
        ]
        let kept = [
            ".copy.sqlite.tmp-\(live)-456",  // a live process's
            ".other.sqlite.tmp-\(dead)-1",  // another target's
            ".copy.sqlite.tmp-\(dead)-1x", ".copy.sqlite.tmp-\(dead)-1-wal.bak", ".copy.sqlite.tmp-\(dead)",
            "copy.sqlite.tmp-\(dead)-1", "unrelated.txt", "victim",
        ]
        for name in stale + kept { try writeFile(folder + "/" + name, size: 5) }
        // A symlink by the pattern is never followed nor removed.
        let link = ".copy.sqlite.tmp-\(dead)-777"
        #expect(symlink(folder + "/victim", folder + "/" + link) == 0)

        _ = try f.store.backup(to: folder + "/copy.sqlite")
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: folder))
        #expect(left == Set(kept + [link, "copy.sqlite"]))
        #expect(onDisk(folder + "/victim")?.size == 5)

        // Even a backup refused because its name is taken (one killed after its link) clears them.
        try writeFile(folder + "/" + stale[0], size: 5)
        #expect(expectCode(.conflict) { try f.store.backup(to: folder + "/copy.sqlite") } != nil)
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: folder)) == left)
    }

    @Test("vacuum shrinks a store after mass deletes and reports both sizes")
    func vacuumShrinks() throws {
        let f = try Fixture()
        let pad = JSONValue.string(String(repeating: "y", count: 1000))
        try f.store.write { tx in for i in 0..<4000 { try tx.put(ref("v", "\(i)"), value: ["pad": pad]) } }
        try f.store.write { tx in for i in 0..<4000 where i % 100 != 0 { try tx.delete(ref("v", "\(i)")) } }
        try f.store.checkpoint()
        let result = try f.store.vacuum()
        let before = try #require(result["bytes_before"]?.intValue)
        let after = try #require(result["bytes_after"]?.intValue)
        #expect(before > 4_000_000)
        #expect(after < before / 4, "\(result)")
        #expect(after == (onDisk(f.dbPath)?.size ?? 0) + (onDisk(f.dbPath + "-wal")?.size ?? 0))
        #expect(try f.store.read { try $0.objectCount() } == 40)
        #expect(try f.store.read { try $0.get(ref("v", "100"))?.value } == ["pad": pad])
    }
}
