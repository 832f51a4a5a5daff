// The lock next to the database (assetd(8), DATA MODEL, The unlink queue; assetctl(1) --db): one
// writable store at a time drains and writes; a second writable open is busy, a read-only open
// reads but cannot write or sweep, and the lock is free again once the holder closes.

import Foundation
import Glibc
import Synchronization
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct StoreLockTests {
    @Test("a second writable store on the same database is refused as busy while the first is open")
    func secondWriterBusy() throws {
        let f = try Fixture()
        let error = expectCode(.busy) { try Store(path: f.dbPath, configuration: f.configuration) }
        #expect(error != nil)
        // The first store is unaffected.
        try f.put([(ref("c", "k"), ["n": 1])])
        #expect(try f.exists(ref("c", "k")))
    }

    @Test("a second open does not drain the queue the holder owns")
    func secondOpenDoesNotDrain() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        try f.delete(ref("c", "k"))
        #expect(expectCode(.busy) { try Store(path: f.dbPath, configuration: f.configuration) } != nil)
        #expect(f.exists(path))
        #expect(try f.store.pending().map(\.path) == [path])
    }

    @Test("a read-only store opens beside the holder, reads, and refuses writes and sweeps as busy")
    func readOnlyBesideHolder() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin", size: 21)
        try f.hold(path, key: "k")
        var config = f.configuration
        config.readOnly = true
        let reader = try Store(path: f.dbPath, configuration: config)
        defer { reader.close() }
        #expect(reader.isReadOnly)

        let obj = try #require(try reader.read { try $0.get(ref("c", "k")) })
        #expect(obj.files.map(\.size) == [21])
        #expect(try reader.read { try $0.file(path) }?.edges.count == 1)
        #expect(
            try reader.query(clause: "WHERE key = ?", parameters: ["k"], include: .rows).first?.columns?["size"]
                == .int(21))

        #expect(expectCode(.busy) { try reader.write { tx in try tx.put(ref("c", "other"), value: [:]) } } != nil)
        #expect(expectCode(.busy) { try reader.sweep() } != nil)
        #expect(try !f.exists(ref("c", "other")))

        // It sees later commits of the holder.
        try f.put([(ref("c", "later"), [:])])
        #expect(try reader.read { try $0.exists(ref("c", "later")) })
    }

    @Test("after the holder closes, a new writable store opens and writes")
    func reopenAfterClose() throws {
        let f = try Fixture()
        try f.put([(ref("c", "k"), ["n": 1])])
        f.store.close()
        let second = try Store(path: f.dbPath, configuration: f.configuration)
        f.store = second
        try second.write { tx in try tx.put(ref("c", "k2"), value: [:]) }
        #expect(try second.read { try $0.objectCount() } == 2)
        #expect(expectCode(.busy) { try Store(path: f.dbPath, configuration: f.configuration) } != nil)
    }

    @Test("a closed store refuses further use")
    func closedStoreRefusesUse() throws {
        let f = try Fixture()
        f.store.close()
        #expect(throws: StoreError.self) { try f.store.read { try $0.objectCount() } }
        #expect(throws: StoreError.self) { try f.store.sweep() }
    }

    @Test(
        "a lock left held a moment under this process's own pid (a forked child before its exec) is waited for, not busy"
    )
    func ownPidHolderWaitedFor() throws {
        let f = try Fixture()
        f.store.close()
        // The lock taken again on an open file of its own, as a child between fork and exec
        // shares it, under this pid; released when the open first retries (no timing).
        let lockPath = f.dbPath + ".lock"
        let fd = open(lockPath, O_RDWR | O_CLOEXEC)
        #expect(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
        let retries = Mutex(0)
        StoreLock.ownPidRetried.withLock {
            $0 = { path in
                guard path == lockPath else { return }  // another test's store
                if retries.withLock({ n in
                    n += 1; return n
                }) == 1 {
                    close(fd)
                }
            }
        }
        defer { StoreLock.ownPidRetried.withLock { $0 = nil } }
        let second = try Store(path: f.dbPath, configuration: f.configuration)
        #expect(retries.withLock { $0 } == 1)
        f.store = second
        try second.write { tx in try tx.put(ref("c", "k"), value: [:]) }
        #expect(try second.read { try $0.exists(ref("c", "k")) })
    }
}
