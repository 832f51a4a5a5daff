// The files assetd makes beside the database (`<db>.lock`, the ballast) are never opened
// through a symlink: a user who could place one there would have root truncate and write its
// target (assetd(8), Managed roots: the database's folder).

import AssetStore
import AssetStoreTestSupport
import Foundation
import Glibc
import Testing

@Suite struct StateFileLinkTests {
    /// A file outside the store whose content must survive, and a symlink to it at `link`.
    func plant(_ f: Fixture, at link: String) throws -> String {
        let victim = f.dir + "/victim"
        try "keep".write(toFile: victim, atomically: false, encoding: .utf8)
        unlink(link)
        #expect(symlink(victim, link) == 0)
        return victim
    }

    @Test("a symlink at the lock file's name stops the open and its target is not written")
    func lockThroughSymlink() throws {
        let f = try Fixture()
        f.store.close()
        let victim = try plant(f, at: f.dbPath + ".lock")
        #expect(throws: StoreError.self) { _ = try Store(path: f.dbPath, configuration: f.configuration) }
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "keep")
    }

    @Test("a symlink at the ballast's new name is replaced, not written through")
    func ballastThroughSymlink() throws {
        let f = try Fixture()
        f.store.close()
        unlink(f.dbPath + ".ballast")
        let victim = try plant(f, at: f.dbPath + ".ballast.new")
        try f.reopen()
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "keep")
        var st = stat()
        #expect(lstat(f.dbPath + ".ballast", &st) == 0 && st.st_mode & S_IFMT == S_IFREG && st.st_size > 0)
    }
}
