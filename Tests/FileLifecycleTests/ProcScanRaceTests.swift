// The unlinker looks at the file again after the open-file check: without leases that check
// reads all of /proc, and a service replacing the file atomically meanwhile (a new file renamed
// over the name) must keep the new file, the queued one's unlink refused as identity_changed.
// Without that check the name is looked at once more, just before unlinkat, for the same.

import Foundation
import Glibc
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct ProcScanRaceTests {
    /// What the registry records of the file at `path`: its stamp (birth, generation where the
    /// filesystem has them, ctime) and size.
    private func recorded(_ path: String) throws -> (FileStamp, Int64) {
        let st = try FileStatus.of(AT_FDCWD, path).get()
        let generation = try FileGeneration.read(dirfd: AT_FDCWD, leaf: path, device: st.device, inode: st.inode).get()
        return (FileStamp(birth: st.birth, generation: generation, ctime: st.ctime), st.size)
    }

    @Test("a file renamed over the queued one during the /proc pass is kept: identity_changed")
    func renamedOverDuringScan() throws {
        let f = try Fixture()
        let path = try f.makeFile("p/movie.bin", size: 100)
        let fresh = try f.makeFile("p/.movie.bin.tmp", size: 7)
        let old = try #require(onDisk(path))
        // A pass that finds nothing open (the real one may be incomplete in a container).
        let probe = OpenFileProbe(useLeases: false) {
            #expect(rename(fresh, path) == 0)
            return ProcScan()
        }
        let (stamp, size) = try recorded(path)
        let outcome = SafeUnlinker(roots: f.store.roots).unlink(
            path: path, root: f.root, device: old.device, inode: old.inode, stamp: stamp, size: size, probe: probe)
        #expect(outcome == .identityChanged)
        #expect(onDisk(path)?.size == 7, "the new file was unlinked")
    }

    @Test("an unchanged file is still removed after the /proc pass")
    func unchangedRemoved() throws {
        let f = try Fixture()
        let path = try f.makeFile("p/movie.bin", size: 100)
        let old = try #require(onDisk(path))
        let (stamp, size) = try recorded(path)
        let outcome = SafeUnlinker(roots: f.store.roots).unlink(
            path: path, root: f.root, device: old.device, inode: old.inode, stamp: stamp, size: size,
            probe: OpenFileProbe(useLeases: false) { ProcScan() })
        #expect(outcome == .removed)
        #expect(onDisk(path) == nil)
    }

    @Test("with no open check, a file renamed over the queued one after its name was opened is kept")
    func renamedOverAfterOpen() throws {
        let f = try Fixture()
        let path = try f.makeFile("p/movie.bin", size: 100)
        let fresh = try f.makeFile("p/.movie.bin.tmp", size: 7)
        let old = try #require(onDisk(path))
        let (stamp, size) = try recorded(path)
        // The unlinker's test hook runs once the name is opened and its mount checked.
        SafeUnlinker.stepHooks.withLock { $0[f.root] = { _ in #expect(rename(fresh, path) == 0) } }
        SafeUnlinker.anyStepHook.store(true, ordering: .relaxed)
        defer { SafeUnlinker.stepHooks.withLock { $0[f.root] = nil } }
        let outcome = SafeUnlinker(roots: f.store.roots).unlink(
            path: path, root: f.root, device: old.device, inode: old.inode, stamp: stamp, size: size)
        #expect(outcome == .identityChanged)
        #expect(onDisk(path)?.size == 7, "the new file was unlinked")
    }
}
