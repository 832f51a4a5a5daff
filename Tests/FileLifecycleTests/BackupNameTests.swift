// A backup's copy gets its final name by a rename that replaces nothing (assetctl(1),
// backup): linked and then unlinked, a backup killed between the two left the copy with two
// names, which every open refuses, `assetctl --db PATH restore` included. The test hooks see
// the copy the moment it has its name, and stand for a filesystem without RENAME_NOREPLACE;
// they are global, so the tests here run one at a time.

import AssetStoreTestSupport
import Foundation
import Glibc
import Synchronization
import Testing

@testable import AssetStore

@Suite(.serialized) struct BackupNameTests {
    /// The link count of `path`, and the names in its folder other than its own.
    static func look(_ path: String) -> (links: Int, others: [String]) {
        var st = stat()
        let links = lstat(path, &st) == 0 ? Int(st.st_nlink) : 0
        let folder = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        let all = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return (links, all.filter { $0 != name }.sorted())
    }

    /// Runs `body` with the hooks set for backups to `target`: `refusal` stands for the
    /// rename's errno; what the copy looked like once named is returned.
    static func named(
        _ target: String, refusal: Int32? = nil, _ body: () throws -> Void
    ) rethrows -> (links: Int, others: [String])? {
        let seen = Mutex<(links: Int, others: [String])?>(nil)
        Store.backupRenaming.withLock { $0 = { $0 == target ? refusal : nil } }
        Store.backupNamed.withLock {
            $0 = { path in
                guard path == target else { return }
                let now = BackupNameTests.look(path)
                seen.withLock { $0 = now }
            }
        }
        defer {
            Store.backupRenaming.withLock { $0 = nil }
            Store.backupNamed.withLock { $0 = nil }
        }
        try body()
        return seen.withLock { $0 }
    }

    @Test("a backup's copy has one name from the moment it has its final name")
    func oneName() throws {
        let f = try Fixture()
        try f.put([(ref("c", "k"), ["n": 1])])
        let folder = f.dir + "/backups"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let target = folder + "/copy.sqlite"
        let seen = try Self.named(target) { _ = try f.store.backup(to: target) }
        #expect(seen?.links == 1, "\(String(describing: seen))")
        #expect(seen?.others == [])
        #expect(Store.otherNames(target) == nil)
    }

    @Test("without RENAME_NOREPLACE a backup links its copy, and the next one removes a temp name a kill left")
    func linkedWhereNoRename() throws {
        let f = try Fixture()
        try f.put([(ref("c", "k"), ["n": 1])])
        let folder = f.dir + "/backups"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let target = folder + "/copy.sqlite"
        let seen = try Self.named(target, refusal: EINVAL) { _ = try f.store.backup(to: target) }
        #expect(seen?.links == 2, "linked: \(String(describing: seen))")
        #expect(Self.look(target).links == 1)
        #expect(Self.look(target).others == [])

        // What a backup killed between its link and its unlink leaves: the copy under its temp
        // name too, that of a process gone (above pid_max, no process has it).
        let pidMax = try String(contentsOfFile: "/proc/sys/kernel/pid_max", encoding: .utf8)
        let dead = try #require(Int32(pidMax.trimmingCharacters(in: .whitespacesAndNewlines))) + 1
        let temp = folder + "/.copy.sqlite.tmp-\(dead)-42"
        #expect(link(target, temp) == 0)
        #expect(Store.otherNames(target) != nil)
        #expect(expectCode(.conflict) { try f.store.backup(to: target) } != nil)
        #expect(Self.look(target).links == 1)
        #expect(Self.look(target).others == [])
        #expect(Store.otherNames(target) == nil)
    }
}
