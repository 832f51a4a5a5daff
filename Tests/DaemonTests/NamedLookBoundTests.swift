// The looks at the files a bounded caller's put or edge.add names are charged to its request's
// allowance by their paths' depth, as its re-reads of held files are (HeldRecheckTests): a put
// of many files deep below the root is refused (query_rejected) before anything is walked,
// instead of holding the writer; a shallow one commits, and an admin's is not bounded. Steps
// are counted by the probe's test hook (`FileProbe.stepHooks`), which every look calls with its
// root first.

@testable import AssetDaemon
@testable import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Synchronization
import Testing

@Suite(.serialized, .enabled(if: getuid() == 0, "needs root to chown a folder to another uid"))
struct NamedLookBoundTests: FileAccessSuite {
    let folders = TempFolders(prefix: "assetd-namedlook-")
    let bob: UInt32 = 1001
    let eve: UInt32 = 1002

    /// `count` files of eve's in a folder of hers `depth` folders below `root` (u<eve>/d1/…),
    /// so each path has depth + 1 components below the root.
    private func files(_ root: String, _ count: Int, depth: Int) throws -> [String] {
        var dir = root + "/u\(eve)"
        for level in 0..<depth {
            if level > 0 { dir += "/d\(level)" }
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            #expect(chown(dir, eve, eve) == 0 && chmod(dir, 0o755) == 0)
        }
        return try (0..<count).map { i in
            let path = dir + "/f\(i).bin"
            guard FileManager.default.createFile(atPath: path, contents: Data("x".utf8)) else {
                throw CocoaError(.fileWriteUnknown)
            }
            #expect(chown(path, eve, eve) == 0)
            return path
        }
    }

    /// Eve's context, bounded at `limit` objects as the daemon would set it.
    private func bounded(_ store: Store, _ limit: Int?) -> MethodContext {
        var ctx = context(store, uid: eve)
        ctx.cascadeLimit = limit
        return ctx
    }

    private func putParams(_ files: [String], key: String = "k") -> JSONValue {
        ["collection": "c", "key": .string(key), "value": ["file": .array(files.map(JSONValue.string))]]
    }

    /// Every step the probe takes below `root` while `body` runs, the root's own included.
    private func steps<T>(_ root: String, _ body: () throws -> T) rethrows -> (Int, T) {
        let count = Mutex(0)
        FileProbe.stepHooks.withLock { $0[root] = { _ in count.withLock { $0 += 1 } } }
        FileProbe.anyStepHook.store(true, ordering: .relaxed)
        defer { FileProbe.stepHooks.withLock { $0[root] = nil } }
        let value = try body()
        return (count.withLock { $0 }, value)
    }

    @Test("a bounded put naming files deep below the root is refused before any step; shallow ones commit")
    func deepPutRefused() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        // At a bound of 10, 110 calls: 20 files six components deep cost 20 × (1 + 6) = 140.
        let deep = try files(root, 20, depth: 5)
        let (n, refusal) = steps(root) { MethodTable.call("object.put", putParams(deep), bounded(store, 10)) }
        #expect(n == 0)
        guard case .failure(let e) = refusal else {
            Issue.record("the put was answered")
            return
        }
        #expect(e.stableCode == "query_rejected")
        #expect(e.message.contains("control.max_cascade_objects = 10"), "\(e.message)")
        #expect(try !registered(store, deep[0]))
        // Three components deep, 20 × 4 = 80 of 110: it commits, every file looked at.
        let shallow = try files(root + "/s", 20, depth: 1)
        let (m, done) = steps(root) { MethodTable.call("object.put", putParams(shallow, key: "s"), bounded(store, 10)) }
        #expect(m > 20)
        if case .failure(let e) = done { Issue.record("the shallow put was refused: \(e.message)") }
        // Unbounded, or an admin's, the deep put commits.
        _ = try MethodTable.call("object.put", putParams(deep), bounded(store, nil)).get()
        var admin = context(store, uid: 0, admin: true)
        admin.cascadeLimit = nil
        _ = try MethodTable.call("object.put", putParams(deep, key: "a"), admin).get()
    }

    @Test("edge.add ops naming files deep below the root are charged in transact, walked no further than allowed")
    func deepEdgesRefused() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let deep = try files(root, 20, depth: 5)
        func ops(_ files: [String]) -> JSONValue {
            let put: JSONValue = ["method": "object.put", "params": putParams([], key: "src")]
            return .array(
                [put]
                    + files.map { path in
                        [
                            "method": "edge.add",
                            "params": [
                                "name": "e", "source": ["collection": "c", "key": "src"],
                                "destination": ["file": .string(path)], "rules": [],
                            ],
                        ]
                    })
        }
        // Each op's look is charged before it is taken: the ops are walked while the allowance
        // lasts (15 files of 7 calls: 105 of 110), never past it, and the transact refused.
        let (n, refusal) = steps(root) { MethodTable.call("transact", ["ops": ops(deep)], bounded(store, 10)) }
        #expect(n <= 15 * 7)
        guard case .failure(let e) = refusal else {
            Issue.record("the transact was answered")
            return
        }
        #expect(e.stableCode == "query_rejected")
        #expect(e.message.hasPrefix("ops["), "\(e.message)")
        // One edge.add alone is charged too, and fits.
        let one: JSONValue = [
            "name": "e", "source": ["collection": "c", "key": "src"], "destination": ["file": .string(deep[0])],
            "rules": [],
        ]
        _ = try MethodTable.call("object.put", putParams([], key: "src"), bounded(store, 10)).get()
        _ = try MethodTable.call("edge.add", one, bounded(store, 10)).get()
        // Shallow, the same transact commits.
        let shallow = try files(root + "/s", 20, depth: 1)
        _ = try MethodTable.call("transact", ["ops": ops(shallow)], bounded(store, 10)).get()
    }

    @Test("an unchecked put whose look openat2 cannot take is charged the walk before it is walked")
    func walkChargedBeforeWalking() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        var unchecked = context(store, uid: eve, enforce: false)
        unchecked.cascadeLimit = 10
        // 200 folders deep, the last name a symlink (openat2: ELOOP), so the look walks every
        // name. Charged as openat2's, 1 + 201 / 16 = 13 of 110 calls, it walked 201 names;
        // charged as a walk, 1 + 201, it is refused before the walk.
        var dir = root
        for level in 0..<200 { dir += "/d\(level % 10)" }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        #expect(symlink("elsewhere", dir + "/link.bin") == 0)
        let (n, refusal) = steps(root) { MethodTable.call("object.put", putParams([dir + "/link.bin"]), unchecked) }
        #expect(n <= 1, "walked \(n) steps")
        guard case .failure(let e) = refusal else {
            Issue.record("the put was answered")
            return
        }
        #expect(e.stableCode == "query_rejected", "\(e.message)")
        // Shallow, the walk fits, and tells why: the last name is no regular file.
        #expect(symlink("elsewhere", root + "/link.bin") == 0)
        let shallow = MethodTable.call("object.put", putParams([root + "/link.bin"], key: "s"), unchecked)
        guard case .failure(let s) = shallow else {
            Issue.record("the shallow put was answered")
            return
        }
        #expect(s.stableCode == "not_a_regular_file", "\(s.message)")
    }

    /// A folder 200 deep below `root`.
    private func deepFolder(_ root: String) throws -> String {
        var dir = root
        for level in 0..<200 { dir += "/d\(level % 10)" }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    private func edge(_ source: String, _ path: String) -> JSONValue {
        [
            "name": "e", "source": ["collection": "c", "key": .string(source)], "destination": ["file": .string(path)],
            "rules": [],
        ]
    }

    @Test("an unchecked put re-reading a held file that openat2 cannot take is charged the walk")
    func heldWalkCharged() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        // c/h holds a file 200 folders deep, then replaced by a symlink (openat2: ELOOP), so
        // a look at it walks every name.
        let path = try deepFolder(root) + "/held.bin"
        #expect(FileManager.default.createFile(atPath: path, contents: Data("x".utf8)))
        let unbounded = context(store, uid: eve, enforce: false)
        _ = try MethodTable.call("object.put", putParams([], key: "h"), unbounded).get()
        _ = try MethodTable.call("edge.add", edge("h", path), unbounded).get()
        #expect(unlink(path) == 0 && symlink("elsewhere", path) == 0)
        var unchecked = unbounded
        unchecked.cascadeLimit = 10
        // The put names no file: only the held one is read again, and its walk is past 110.
        let (n, refusal) = steps(root) { MethodTable.call("object.put", putParams([], key: "h"), unchecked) }
        #expect(n <= 1, "walked \(n) steps")
        guard case .failure(let e) = refusal else {
            Issue.record("the put was answered")
            return
        }
        #expect(e.stableCode == "query_rejected", "\(e.message)")
    }

    @Test("an unchecked edge.add whose look openat2 cannot take is charged the walk before it is walked")
    func edgeWalkCharged() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let path = try deepFolder(root) + "/link.bin"
        #expect(symlink("elsewhere", path) == 0)
        let unbounded = context(store, uid: eve, enforce: false)
        _ = try MethodTable.call("object.put", putParams([], key: "src"), unbounded).get()
        var unchecked = unbounded
        unchecked.cascadeLimit = 10
        let (n, refusal) = steps(root) { MethodTable.call("edge.add", edge("src", path), unchecked) }
        #expect(n <= 1, "walked \(n) steps")
        guard case .failure(let e) = refusal else {
            Issue.record("the edge.add was answered")
            return
        }
        #expect(e.stableCode == "query_rejected", "\(e.message)")
    }
}
