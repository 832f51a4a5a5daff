// The file registry (assetd(8), DATA MODEL, Files): what a row records, when it is refreshed (put
// again, touch) together with the default index, what `file(path)` answers, and that a row lives
// exactly as long as some edge references its file.

import Foundation
import Testing
import AssetStore
import AssetStoreTestSupport

/// Ways an object holding a file tells the store to look at the file again.
enum Refresh: String, CaseIterable, Sendable {
    case putAgain
    case touch

    /// Runs the refresh on `r`, which references `path` the way `entry` made it. Putting again
    /// leaves a manual edge alone, so the value names the file only when the field does.
    func run(_ r: ObjectRef, path: String, entry: Entry, in f: Fixture) throws {
        switch self {
        case .putAgain:
            let value: JSONValue = entry == .fileField ? ["file": .string(path), "round": 2] : ["note": "again"]
            try f.put([(r, value)])
        case .touch:
            try f.store.write { tx in try tx.touch(r) }
        }
    }
}

@Suite struct RegistryTests {
    @Test(
        "touch and put again re-measure every held file, two canonically equal paths in other bytes included",
        arguments: Refresh.allCases)
    func refreshesCanonicallyEqualPaths(refresh: Refresh) throws {
        let f = try Fixture()
        let composed = try f.makeFile("\u{1FB}.bin", size: 10)
        let decomposed = try f.makeFile("a\u{30A}\u{301}.bin", size: 10)
        #expect(composed == decomposed)  // Swift calls them equal; they are two files
        #expect(!composed.utf8.elementsEqual(decomposed.utf8))
        try f.store.write { tx in
            try tx.put(ref("c", "k"), value: ["note": "first"])
            try tx.addEdge(name: "one", source: ref("c", "k"), destination: .file(composed), rules: [])
            try tx.addEdge(name: "two", source: ref("c", "k"), destination: .file(decomposed), rules: [])
        }
        #expect(try f.indexedSize(key: "k") == .int(20))
        try grow(composed, by: 90)
        try grow(decomposed, by: 90)
        try refresh.run(ref("c", "k"), path: composed, entry: .manualEdge, in: f)
        #expect(try f.fileReport(composed)?.record.size == 100)
        #expect(try f.fileReport(decomposed)?.record.size == 100)
        #expect(try f.indexedSize(key: "k") == .int(200))
    }

    @Test("a registered file's size, device, inode, mtime and first sighting are recorded")
    func recordsWhatIsOnDisk() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin", size: 123)
        try setModificationTime(path, 1_700_000_000.25)
        try f.hold(path, key: "k")
        let disk = try #require(onDisk(path))
        let record = try #require(try f.fileReport(path)).record
        #expect(record.path == path)
        #expect(record.size == 123)
        #expect(record.device == disk.device)
        #expect(record.inode == disk.inode)
        #expect(record.mtime == disk.mtime)
        #expect(abs((record.mtime ?? 0) - 1_700_000_000.25) < 0.001)
        #expect(!record.missing)
        #expect(record.firstSeen == f.clock.now)
        let obj = try #require(try f.store.read { try $0.get(ref("c", "k")) })
        #expect(obj.files == [record])
        #expect(try f.indexedSize(key: "k") == .int(123))
    }

    @Test(
        "a file that grew is re-measured when its holder is put again or touched, and the index follows",
        arguments: Refresh.allCases, Entry.allCases)
    func refreshSize(refresh: Refresh, entry: Entry) throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin", size: 10)
        try entry.register(path, from: ref("c", "k"), in: f)
        let firstSeen = f.clock.now
        #expect(try f.indexedSize(key: "k") == .int(10))

        try grow(path, by: 90)
        try setModificationTime(path, 1_700_000_100)
        f.clock.advance(60)
        try refresh.run(ref("c", "k"), path: path, entry: entry, in: f)

        let record = try #require(try f.fileReport(path)).record
        #expect(record.size == 100)
        #expect(record.mtime == onDisk(path)?.mtime)
        #expect(record.firstSeen == firstSeen)
        #expect(try f.indexedSize(key: "k") == .int(100))
    }

    @Test(
        "a file replaced by a new inode gets its new identity on refresh and is then unlinked as that file",
        arguments: Refresh.allCases, Entry.allCases)
    func refreshIdentity(refresh: Refresh, entry: Entry) throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin", size: 10)
        try entry.register(path, from: ref("c", "k"), in: f)
        let old = try #require(try f.fileReport(path)).record

        try replaceWithNewInode(path, size: 40)
        let new = try #require(onDisk(path))
        #expect(new.inode != old.inode)
        try refresh.run(ref("c", "k"), path: path, entry: entry, in: f)

        let record = try #require(try f.fileReport(path)).record
        #expect(record.inode == new.inode)
        #expect(record.device == new.device)
        #expect(record.size == 40)
        #expect(try f.indexedSize(key: "k") == .int(40))

        try f.delete(ref("c", "k"))
        let sweep = try f.store.sweep()
        #expect(sweep.unlinked == [path])
        #expect(sweep.skipped.isEmpty)
        #expect(!f.exists(path))
    }

    @Test("a file that appears after it was registered is picked up on refresh")
    func missingThenCreated() throws {
        let f = try Fixture()
        let path = f.root + "/later/one.bin"
        try f.hold(path, key: "k")
        #expect(try f.fileReport(path)?.record.missing == true)
        try f.makeFile("later/one.bin", size: 55)
        try f.store.write { tx in try tx.touch(ref("c", "k")) }
        let record = try #require(try f.fileReport(path)).record
        #expect(!record.missing)
        #expect(record.size == 55)
        #expect(record.inode == onDisk(path)?.inode)
        #expect(try f.indexedSize(key: "k") == .int(55))
    }

    @Test("a file that vanished is marked missing with size 0 on refresh")
    func existingThenVanished() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin", size: 10)
        try f.hold(path, key: "k")
        try FileManager.default.removeItem(atPath: path)
        try f.store.write { tx in try tx.touch(ref("c", "k")) }
        let record = try #require(try f.fileReport(path)).record
        #expect(record.missing)
        #expect(record.size == 0)
        #expect(try f.indexedSize(key: "k") == .int(0))
    }

    @Test("touching one holder of a shared file re-indexes every holder when its size changed")
    func touchReindexesAllHolders() throws {
        let f = try Fixture()
        let path = try f.makeFile("shared.bin", size: 10)
        try f.hold(path, key: "a")
        try f.hold(path, key: "b")
        try grow(path, by: 5)
        try f.store.write { tx in try tx.touch(ref("c", "a")) }
        #expect(try f.indexedSize(key: "a") == .int(15))
        #expect(try f.indexedSize(key: "b") == .int(15))
    }

    @Test("file(path) returns the registry row and every edge that references the file")
    func fileReportListsEdges() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin", size: 7)
        try f.hold(path, key: "owner")
        try f.store.write { tx in
            try tx.put(ref("other", "keeper"), value: [:])
            try tx.addEdge(
                name: "keep", source: ref("other", "keeper"), destination: .file(path),
                rules: .deleteDestinationIfAllSourcesDeleted)
            try tx.put(ref("other", "watcher"), value: [:])
            try tx.addEdge(name: "watch", source: ref("other", "watcher"), destination: .file(path), rules: [])
        }
        let report = try #require(try f.fileReport(path))
        #expect(report.record.size == 7)
        #expect(report.edges.count == 3)
        let byName = Dictionary(uniqueKeysWithValues: report.edges.map { ($0.name, $0) })
        #expect(byName["file"]?.source == ref("c", "owner"))
        #expect(byName["file"]?.kind == .derived(field: "file"))
        #expect(byName["file"]?.rules == .deleteDestinationIfAllSourcesDeleted)
        #expect(byName["keep"]?.source == ref("other", "keeper"))
        #expect(byName["keep"]?.kind == .manual)
        #expect(byName["watch"]?.rules == [])
        #expect(report.retainedBy == 2)
        #expect(report.edges.allSatisfy { $0.destination == .file(path) })
        #expect(try f.fileReport(f.root + "/a/unknown.bin") == nil)
    }

    @Test("a registry row goes with the last edge to its file, and the file stays on disk when no rule deleted it")
    func rowGoesWithLastEdge() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        let removed = try f.store.write { tx in
            try tx.removeEdge(name: "file", source: ref("c", "k"), destination: .file(path))
        }
        #expect(removed.value)
        #expect(removed.report.filesQueued.isEmpty)
        #expect(try f.fileReport(path) == nil)
        #expect(try f.store.read { try $0.get(ref("c", "k")) }?.files == [])
        #expect(try f.indexedSize(key: "k") == .int(0))
        #expect(try f.store.pending().isEmpty)
        #expect(try f.store.sweep().unlinked.isEmpty)
        #expect(f.exists(path))
    }

    @Test("deleting the only holder of a weak edge forgets the file but leaves it on disk")
    func weakHolderDeleted() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try f.store.write { tx in
            try tx.put(ref("c", "k"), value: [:])
            try tx.addEdge(name: "watch", source: ref("c", "k"), destination: .file(path), rules: [])
        }
        #expect(try f.fileReport(path) != nil)
        let del = try f.delete(ref("c", "k"))
        #expect(del.filesQueued.isEmpty)
        #expect(try f.fileReport(path) == nil)
        #expect(try f.store.pending().isEmpty)
        #expect(try f.store.sweep().unlinked.isEmpty)
        #expect(f.exists(path))
    }

    @Test("a registry row survives while another edge still references the file")
    func rowStaysWhileReferenced() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "a")
        try f.hold(path, key: "b")
        try f.store.write { tx in
            try tx.removeEdge(name: "file", source: ref("c", "a"), destination: .file(path))
        }
        let report = try #require(try f.fileReport(path))
        #expect(report.edges.map(\.source) == [ref("c", "b")])
    }

    @Test("a shared file's row goes with its last edge after a holder was deleted earlier in the transaction")
    func rowGoesAfterEarlierHolderDelete() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "a")
        try f.hold(path, key: "b")
        let report = try f.store.write { tx in
            try tx.delete(ref("c", "a"))
            // b's edge still retains the file here, so a's delete leaves its row alone.
            try tx.flush()
            #expect(try tx.file(path) != nil)
            _ = try tx.removeEdge(name: "file", source: ref("c", "b"), destination: .file(path))
        }.report
        #expect(report.deleted.map(\.ref) == [ref("c", "a")])
        #expect(report.filesQueued.isEmpty)
        #expect(try f.fileReport(path) == nil)
        #expect(f.exists(path))
    }

    @Test(
        "a shared file is queued when its holders go one after the other in a transaction, each delete flushed",
        arguments: [false, true])
    func sharedFileQueuedAfterHoldersGo(laterInNextTransaction: Bool) throws {
        let f = try Fixture()
        let path = try f.makeFile("a/shared.bin")
        try f.hold(path, key: "a")
        try f.hold(path, key: "b")
        var queued = [String]()
        let first = try f.store.write { tx in
            try tx.delete(ref("c", "a"))
            // b still retains the file: its row stays, nothing is queued.
            try tx.flush()
            #expect(try tx.file(path) != nil)
            if !laterInNextTransaction { try tx.delete(ref("c", "b")) }
        }.report
        queued += first.filesQueued
        if laterInNextTransaction {
            #expect(first.filesQueued.isEmpty)
            queued += try f.delete(ref("c", "b")).filesQueued
        }
        #expect(queued == [path], "the last holder's delete queues the file")
        #expect(try f.store.pending().map(\.path) == [path])
    }

    @Test(
        "one request deletes the holder a second one cascades to, in either order, and reports each once",
        arguments: [false, true])
    func deleteAlongsideItsCascade(cascadeFirst: Bool) throws {
        let f = try Fixture()
        let path = try f.makeFile("a/held.bin")
        try f.hold(path, key: "child")
        try f.put([(ref("c", "parent"), ["n": 1])])
        try f.store.write { tx in
            try tx.addEdge(
                name: "owns", source: ref("c", "parent"), destination: .object(ref("c", "child")),
                rules: .deleteDestinationIfSourceDeleted)
        }
        let order = cascadeFirst ? [ref("c", "parent"), ref("c", "child")] : [ref("c", "child"), ref("c", "parent")]
        let report = try f.store.write { tx in
            for r in order { try tx.delete(r) }
        }.report
        #expect(Set(report.deleted.map(\.ref)) == [ref("c", "parent"), ref("c", "child")])
        #expect(report.deleted.count == 2)
        #expect(report.filesQueued == [path])
    }

    @Test("a ref deleted, put again and deleted in one transaction is reported deleted once, its file queued")
    func deletePutDelete() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/again.bin")
        try f.hold(path, key: "x")
        let report = try f.store.write { tx in
            try tx.delete(ref("c", "x"))
            try tx.put(ref("c", "x"), value: ["n": 2])
            try tx.delete(ref("c", "x"))
        }.report
        #expect(report.deleted.map(\.ref) == [ref("c", "x")])
        #expect(report.filesQueued == [path])
        #expect(try f.store.objectJSON(ref("c", "x")) == nil)
    }

    @Test("removing an edge to a never-referenced file leaves no registry row")
    func removeEdgeRegistersNothing() throws {
        let f = try Fixture()
        let path = try f.makeFile("stranger")
        let s = ref("n", "s")
        try f.put([(s, [:])])
        let removed = try f.store.write { tx in
            try tx.removeEdge(name: "x", source: s, destination: .file(path))
        }.value
        #expect(!removed)
        // A registry row exists only for a referenced file.
        #expect(try f.store.read { try $0.file(path) } == nil)
    }
}
