// A filesystem numbered anew (a reboot found the disks in another order): files queued under
// its earlier device number are the same files. A renumbering is played by writing the
// queued row's device as an earlier number the root's filesystem had, under its fsid.

import Foundation
import GRDB
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct DeviceRenumberingTests {
    /// The device number the queued rows are shifted to: one no filesystem here has.
    static let shift: Int64 = 1 << 40

    /// Queues `path` (held, then released), then makes its row's device an earlier number of
    /// the root's filesystem: recorded under the root's fsid if `known`, and under another
    /// fsid too if `ambiguous`.
    func queueRenumbered(_ f: Fixture, _ path: String, known: Bool = true, ambiguous: Bool = false) throws {
        try f.hold(path, key: "k")
        try f.delete(ref("c", "k"))
        try f.damage("UPDATE unlink_queue SET device = device + ?", [Self.shift])
        if known {
            try f.damage("INSERT INTO root_device SELECT device + ?, fsid, seen FROM root_device", [Self.shift])
        }
        if ambiguous {
            try f.damage("INSERT INTO root_device SELECT device + ?, fsid + 1, seen FROM root_device", [Self.shift])
        }
    }

    @Test("the store records each root's device under its filesystem id at open")
    func recordsRootDevice() throws {
        let f = try Fixture()
        var st = stat()
        #expect(stat(f.root, &st) == 0)
        let rows = try f.store.read { r in try Row.fetchAll(r.db, sql: "SELECT device, fsid FROM root_device") }
        #expect(rows.count == 1 && rows.first?["device"] == Int64(bitPattern: UInt64(st.st_dev)), "\(rows)")
    }

    @Test("a file queued under its filesystem's earlier device number is unlinked, not kept as replaced")
    func queuedBeforeRenumbering() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try queueRenumbered(f, path)
        let r = try f.store.sweep()
        #expect(r.unlinked == [path] && r.skipped.isEmpty, "\(r.skipped)")
        #expect(!f.exists(path))
    }

    @Test("a file gone already, queued under the earlier number, is done, not retried as on an unmounted disk")
    func goneBeforeRenumbering() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try queueRenumbered(f, path)
        #expect(unlink(path) == 0)
        let r = try f.store.sweep()
        #expect(r.unlinked == [path] && r.failed.isEmpty, "\(r.failed)")
        #expect(r.pending == 0)
    }

    @Test(
        "a file at the path on a device never seen for the root's filesystem, or seen for two, is another filesystem's: kept, row failed and retried"
    )
    func unknownOrAmbiguousDevice() throws {
        for ambiguous in [false, true] {
            let f = try Fixture()
            let path = try f.makeFile("a/one.bin")
            try queueRenumbered(f, path, known: ambiguous, ambiguous: ambiguous)
            // The recorded filesystem not mounted, a stale file where it should be: not the
            // queued file, but no sign the queued one is gone or replaced either: a failure,
            // retried (and parked after Store.parkAfterAttempts, otherFilesystemParked).
            let r = try f.store.sweep()
            #expect(r.skipped.isEmpty && r.unlinked.isEmpty, "ambiguous: \(ambiguous)")
            #expect(r.failed.map(\.path) == [path])
            #expect(r.failed.first?.error.contains("not mounted?") == true, "\(r.failed)")
            #expect(f.exists(path))
            #expect(try f.store.pending().map(\.path) == [path])
            // Mounted again (the row's device is the file's): the retry removes it.
            try f.damage("UPDATE unlink_queue SET device = device - ?", [Self.shift])
            #expect(try f.store.sweep(retryFailed: true).unlinked == [path])
            #expect(!f.exists(path))
        }
    }

    @Test(
        "a file queued under a number its root's filesystem had there is unlinked; under one two filesystems had there it is kept, failed, and said at open"
    )
    func queuedUnderRootsEarlierNumber() throws {
        for ambiguous in [false, true] {
            let f = try Fixture()
            let device = DeviceRenumberingPlayedTests.filesystem(f.root).device
            let path = try f.makeFile("a/one.bin")
            try f.hold(path, key: "k")
            try f.delete(ref("c", "k"))
            try f.damage("UPDATE unlink_queue SET device = device + ?", [Self.shift])
            // Noted under the root only (root_device does not know it): a swap's case.
            try f.damage(
                "INSERT INTO root_filesystem SELECT root, device + ?, fsid, seen FROM root_filesystem", [Self.shift])
            if ambiguous {
                try f.damage(
                    "INSERT INTO root_filesystem SELECT root, device + ?, fsid + 1, seen FROM root_filesystem",
                    [Self.shift])
            }
            try f.reopen(drain: false)
            let r = try f.store.sweep()
            let said = f.store.openWarnings.contains {
                $0.contains("device \(device + Self.shift) was its filesystem's")
            }
            if ambiguous {
                #expect(r.unlinked.isEmpty && r.failed.map(\.path) == [path], "\(r.failed)")
                #expect(f.exists(path))
                #expect(said, "\(f.store.openWarnings)")
                // Once no row carries the number, the next start says nothing of it.
                try f.damage("DELETE FROM unlink_queue")
                try f.reopen(drain: false)
                let again = f.store.openWarnings.filter { $0.contains("was its filesystem's") }
                #expect(again.isEmpty, "\(again)")
            } else {
                #expect(r.unlinked == [path] && r.failed.isEmpty, "\(r.failed)")
                #expect(!said)
            }
        }
    }

    @Test("a file on another filesystem than recorded is parked after its last retry, back at the next open")
    func otherFilesystemParked() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try queueRenumbered(f, path, known: false)
        try f.damage("UPDATE unlink_queue SET attempts = ?", [Store.parkAfterAttempts - 2])
        #expect(try f.store.sweep(retryFailed: true).failed.map(\.attempts) == [Store.parkAfterAttempts - 1])
        let last = try f.store.sweep(retryFailed: true).failed
        #expect(last.map(\.attempts) == [Store.parkAfterAttempts])
        #expect(last.first?.error.hasSuffix("(parked until assetd starts again)") == true, "\(last)")
        // Parked: not retried, not counted again, until an open.
        #expect(try f.store.sweep(retryFailed: true).failed.isEmpty)
        #expect(try f.store.pending().map(\.nextAttempt) == [Store.parkedUntil])
        try f.damage("UPDATE unlink_queue SET device = device - ?", [Self.shift])  // mounted again
        try f.reopen()
        #expect(!f.exists(path))
        #expect(try f.store.pending().isEmpty)
    }

    @Test("a file replaced at the path is kept, renumbered device or not: the inode still tells")
    func replacedAfterRenumbering() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try queueRenumbered(f, path)
        let old = f.root + "/a/old.bin"
        #expect(link(path, old) == 0)  // the old inode lives on: the new file cannot reuse it
        #expect(unlink(path) == 0)
        _ = try f.makeFile("a/one.bin")
        let r = try f.store.sweep()
        #expect(r.skipped.map(\.reason) == [.identityChanged])
        #expect(f.exists(path) && f.exists(old))
    }

    @Test("verify finds a file gone from a renumbered filesystem missing, as it would without the renumbering")
    func verifyAfterRenumbering() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        try f.damage("UPDATE file SET device = device + ?", [Self.shift])
        #expect(unlink(path) == 0)
        // Not known as an earlier number of the root's filesystem: another filesystem, not mounted.
        #expect(try f.verify().of("missing_file").isEmpty)
        try f.damage("INSERT INTO root_device SELECT device + ?, fsid, seen FROM root_device", [Self.shift])
        try f.reopen()  // the start after the reboot reads the numbers anew
        #expect(
            try f.verify().of("missing_file").map(\.subject) == [
                ["collection": "c", "key": "k", "path": .string(path)]
            ])
    }

    @Test("verify of a store another process holds (read-only) reads the renumbering too")
    func verifyReadOnlyAfterRenumbering() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        try f.damage("UPDATE file SET device = device + ?", [Self.shift])
        try f.damage("INSERT INTO root_device SELECT device + ?, fsid, seen FROM root_device", [Self.shift])
        #expect(unlink(path) == 0)
        var c = f.configuration
        c.readOnly = true
        let other = try Store(path: f.dbPath, configuration: c)
        defer { other.close() }
        #expect(
            try other.verify(VerifyOptions()).of("missing_file").map(\.subject) == [
                ["collection": "c", "key": "k", "path": .string(path)]
            ])
    }

    @Test("a database from before root_device opens read-only and verifies; opened to write, it gets the table")
    func databaseBeforeTable() throws {
        let f = try Fixture()
        try f.damage("DROP TABLE root_device; DELETE FROM grdb_migrations WHERE identifier = 'v3'")
        var c = f.configuration
        c.readOnly = true
        let other = try Store(path: f.dbPath, configuration: c)
        #expect(try other.verify(VerifyOptions()).found == 0)
        other.close()
        try f.reopen()
        #expect(try f.store.read { r in try r.db.tableExists("root_device") })
    }
}

/// A nested root lies in folders its outer root's clients write: what they put in its place
/// must not be noted as the root's filesystem.
@Suite struct DeviceRenumberingPinnedTests {
    @Test(
        "a nested root replaced by a symlink to another filesystem: the sweep notes nothing of that filesystem under the root"
    )
    func replacedNestedRoot() throws {
        let f = try Fixture { c in
            c.roots.append(c.roots[0] + "/nested")
            precondition(mkdir(c.roots[1], 0o755) == 0, "cannot make \(c.roots[1])")
        }
        let nested = f.root + "/nested"
        var template = Array("/dev/shm/assetd-elsewhere-XXXXXX".utf8CString)
        try #require(mkdtemp(&template) != nil, "no /dev/shm here")
        let elsewhere = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        defer { _ = try? FileManager.default.removeItem(atPath: elsewhere) }
        let own = DeviceRenumberingPlayedTests.filesystem(nested)
        let other = DeviceRenumberingPlayedTests.filesystem(elsewhere)
        try #require(own.device != other.device && other.fsid != 0, "/dev/shm is not another filesystem here")
        #expect(rename(nested, f.root + "/nested.away") == 0 && symlink(elsewhere, nested) == 0)
        // A sweep that has a row to take reads the roots' filesystems in its transaction.
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        try f.delete(ref("c", "k"))
        let r = try f.store.sweep()
        #expect(r.unlinked == [path], "\(r)")
        let noted = try f.store.read { r in
            try Int64.fetchAll(r.db, sql: "SELECT device FROM root_filesystem WHERE root = ?", arguments: [nested])
        }
        #expect(noted == [own.device], "\(noted)")
    }
}

/// What statvfs reads of the roots' filesystems, played: the numbers now under which ids.
@Suite struct DeviceRenumberingPlayedTests {
    static let shift = DeviceRenumberingTests.shift

    /// The real device and filesystem id of `path`.
    static func filesystem(_ path: String) -> (device: Int64, fsid: Int64) {
        var st = stat()
        var fs = statvfs()
        #expect(stat(path, &st) == 0 && statvfs(path, &fs) == 0)
        return (Int64(bitPattern: UInt64(st.st_dev)), Int64(bitPattern: UInt64(fs.f_fsid)))
    }

    func play(_ f: Fixture, _ filesystems: [(device: Int64, fsid: Int64)]) {
        f.store.state.withLock { $0.rootFilesystems = { filesystems } }
    }

    @Test(
        "two roots whose filesystems report one id on different devices (an overlay and its upper layer) keep each file's own number"
    )
    func sharedFilesystemID() throws {
        let f = try Fixture { $0.roots.append("/nonexistent/assetd-second-root") }  // played below
        let (device, fsid) = Self.filesystem(f.root)
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        try f.delete(ref("c", "k"))
        // The second root: another device under the same id, as an overlay whose upper layer
        // is the first root's filesystem reports (Linux before 6.6), or a cloned disk.
        play(f, [(device, fsid), (device + Self.shift, fsid)])
        let r = try f.store.sweep()
        #expect(r.unlinked == [path] && r.skipped.isEmpty, "\(r.skipped)")
        #expect(!f.exists(path))
        #expect(
            f.store.deviceNow(device, path: path) == device
                && f.store.deviceNow(device + Self.shift, path: path) == device + Self.shift)
    }

    @Test(
        "a filesystem below a root numbered as the root's was before its renumbering keeps its files: unlinked, or gone and done"
    )
    func nestedFilesystemWithEarlierNumber() throws {
        let f = try Fixture()
        let (device, fsid) = Self.filesystem(f.root)  // recorded at open under the root's id
        let kept = try f.makeFile("sub/kept.bin")
        let gone = try f.makeFile("sub/gone.bin")
        try f.hold(kept, key: "k")
        try f.hold(gone, key: "g")
        // The root's filesystem numbered anew; the real files play ones on a filesystem mounted
        // at sub/ that was given the number the root's had (disks found in another order).
        play(f, [(device + Self.shift, fsid)])
        try f.delete(ref("c", "k"), ref("c", "g"))
        #expect(unlink(gone) == 0)
        let r = try f.store.sweep()
        #expect(Set(r.unlinked) == [kept, gone] && r.skipped.isEmpty && r.failed.isEmpty, "\(r.skipped) \(r.failed)")
        #expect(!f.exists(kept) && r.pending == 0)
    }

    @Test("verify finds a file gone from a filesystem below a root numbered as the root's was before missing")
    func nestedFilesystemVerify() throws {
        let f = try Fixture()
        let (device, fsid) = Self.filesystem(f.root)
        let path = try f.makeFile("sub/one.bin")
        try f.hold(path, key: "k")
        #expect(unlink(path) == 0)
        play(f, [(device + Self.shift, fsid)])
        _ = try f.store.pool.write { db in try f.store.noteRootDevices(db, now: f.clock.now) }  // as a start does
        #expect(f.store.deviceNow(device, path: path) == device + Self.shift)
        #expect(
            try f.verify().of("missing_file").map(\.subject) == [
                ["collection": "c", "key": "k", "path": .string(path)]
            ])
    }
}

/// Whether the file system of the fixtures' folder (/tmp) takes a sparse file of a TiB (some refuse a
/// length past their size, or past 2^40).
private let sparseTiB: Bool = {
    let path = "/tmp/assetd-sparse-\(getpid())"
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    defer {
        close(fd)
        unlink(path)
    }
    return fd >= 0 && ftruncate(fd, off_t(1) << 40) == 0
}()

@Suite(.enabled(if: sparseTiB, "the temp folder's file system refuses a sparse file of a TiB"))
struct DeviceRenumberingPolicyTests {
    /// Two sparse files of a TiB each, put as k0 and k1 and recorded under an earlier number of
    /// the root's filesystem, known to its `root_device` rows.
    func renumberedFiles(_ f: Fixture) throws -> Int64 {
        // Sparse files of a TiB each: a min_free that both can reach, whatever else the disk holds
        // (one out of reach would be capped, and nothing evicted).
        let big: Int64 = 1 << 40
        for i in 0..<2 {
            let path = try f.makeFile("f\(i)")
            #expect(truncate(path, off_t(big)) == 0)
            try f.put([(ref("c", "k\(i)"), ["file": .string(path)])])
            f.clock.advance(1)
        }
        f.clock.advance(3600)
        let shift = DeviceRenumberingTests.shift
        try f.damage("UPDATE file SET device = device + ?", [shift])
        try f.damage("INSERT INTO root_device SELECT device + ?, fsid, seen FROM root_device", [shift])
        return big
    }

    /// A floor one and a half files above the free space: only if both count as on this
    /// filesystem can it be reached (else it is capped and nothing goes), and reaching it takes both.
    func enforce(_ f: Fixture, big: Int64) throws -> [String] {
        var vfs = statvfs()
        #expect(statvfs(f.root, &vfs) == 0)
        var p = PolicyConfiguration()
        p.minFree = Int64(vfs.f_bavail) * Int64(vfs.f_frsize) + big + big / 2
        f.store.policy = p
        return try f.store.enforce().objects.map(\.ref.key)
    }

    @Test("min_free evicts files recorded before their filesystem was numbered anew: they are on it")
    func minFreeAfterRenumbering() throws {
        let f = try Fixture()
        let big = try renumberedFiles(f)
        try f.reopen()  // the start after the reboot reads the numbers anew
        #expect(try enforce(f, big: big) == ["k0", "k1"])
    }

    @Test("min_free reads a renumbering found after the start before any sweep has: its files are on it")
    func minFreeRenumberedSinceStart() throws {
        let f = try Fixture()
        let big = try renumberedFiles(f)  // after the open: no sweep has read the numbers since
        #expect(try enforce(f, big: big) == ["k0", "k1"], "a run that read them at open only capped the floor")
    }
}
