// I3 and I5 across a FUSE mount below a root, whose server (a client's own, mounted with
// allow_other) need never answer: nothing that decides "another mount" may ask that mount
// anything, or the writer (a put's probe, the sweep) would wait for ever. The server here
// (Tests/CTestFuse) answers INIT only and counts the requests this process's threads send it;
// each call runs on a thread of its own, waited for with a bound only a hang passes, after
// which the mount is undone (every held request answered with EIO) so the suite goes on.
// Needs root and /dev/fuse; skipped, saying so, without them.

import CTestFuse
import Dispatch
import Foundation
import Glibc
import Synchronization
import Testing
@testable import AssetStore
import AssetStoreTestSupport

/// A FUSE filesystem that never answers, mounted for one test; it holds the fixture, so the
/// fixture's folder is removed only once nothing is mounted in it.
private final class HangingFuse: @unchecked Sendable {
    private var fuse: OpaquePointer?
    private let fixture: Fixture

    init(_ fixture: Fixture, at target: String) throws {
        self.fixture = fixture
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        guard let made = assetd_test_fuse_mount(target) else {
            throw SetupFailed(what: "fuse \(target): errno \(errno)")
        }
        fuse = made
    }

    /// A file mounted over the regular file `file` (which stays, hidden, until the unmount).
    init(_ fixture: Fixture, file: String) throws {
        self.fixture = fixture
        guard let made = assetd_test_fuse_mount_mode(file, 0o100644) else {
            throw SetupFailed(what: "fuse over the file \(file): errno \(errno)")
        }
        fuse = made
    }

    /// Requests counted when it was unmounted.
    private var counted = 0
    /// Held by `wake` and `unmount`, which other threads than the test's may call.
    private let lock = NSLock()

    /// True once this process's threads asked it anything; false once `wake` was called.
    func waitAsked() -> Bool {
        guard let fuse = lock.withLock({ fuse }) else { return false }
        return assetd_test_fuse_wait(fuse) != 0
    }

    /// Lets `waitAsked` return.
    func wake() {
        lock.withLock { fuse.map { assetd_test_fuse_wake($0) } }
    }

    /// Requests other than INIT this process's threads sent it (until it was unmounted).
    var requests: Int { fuse.map { Int(assetd_test_fuse_requests($0)) } ?? counted }

    /// Answers what it holds with EIO, then unmounts: a caller waiting on it goes on.
    func unmount() {
        lock.withLock {
            if let fuse {
                counted = Int(assetd_test_fuse_requests(fuse))
                assetd_test_fuse_unmount(fuse)
            }
            fuse = nil
        }
    }

    /// `body` on a thread of its own; nil if it has not returned after a minute (only a hang
    /// takes that long), in which case the mount is undone so that it returns, and waited for.
    func within<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T? {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<T?>(nil)
        Thread.detachNewThread {
            let value = body()
            result.withLock { $0 = value }
            done.signal()
        }
        if done.wait(timeout: .now() + 60) == .timedOut {
            unmount()
            done.wait()
            return nil
        }
        return result.withLock { $0 }
    }

    deinit { unmount() }
}

/// True when this process may mount a FUSE filesystem (root, /dev/fuse).
private let canMountFuse: Bool = {
    guard getuid() == 0, access("/dev/fuse", R_OK | W_OK) == 0 else { return false }
    let dir = NSTemporaryDirectory() + "assetd-fuse-probe-\(getpid())"
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { rmdir(dir) }
    guard let fuse = assetd_test_fuse_mount(dir) else { return false }
    assetd_test_fuse_unmount(fuse)
    return true
}()

/// A Fixture shared with a test's thread (the thread is waited for before it is used again).
private struct Shared<T>: @unchecked Sendable { let value: T }

@Suite(.enabled(if: canMountFuse, "mounting FUSE needs root and /dev/fuse"))
struct FuseMountTests {
    @Test("a put naming a file below a FUSE mount in a root is refused unsafe_path without asking the mount")
    func putRefusedWithoutAsking() throws {
        let f = try Fixture()
        let fuse = try HangingFuse(f, at: f.root + "/u/mnt")
        defer { fuse.unmount() }
        let shared = Shared(value: f)
        for path in [f.root + "/u/mnt/x.bin", f.root + "/u/mnt/sub/y.bin"] {
            // The put's probe (openat2, then the walk that tells why), and the walk alone, as a
            // put under enforce_ownership takes it.
            let code = fuse.within { () -> String? in
                do {
                    try shared.value.hold(path, key: "k")
                    return nil
                } catch {
                    return (error as? StoreError)?.code.rawValue ?? "\(error)"
                }
            }
            #expect(code == StoreError.Code.unsafePath.rawValue, "\(path): \(String(describing: code))")
            let walked = fuse.within { () -> String? in
                do {
                    _ = try FileProbe.walk(path: path, root: shared.value.root, roots: shared.value.store.roots)
                    return nil
                } catch {
                    return (error as? StoreError)?.code.rawValue ?? "\(error)"
                }
            }
            #expect(walked == StoreError.Code.unsafePath.rawValue, "\(path): \(String(describing: walked))")
        }
        #expect(fuse.requests == 0)
    }

    @Test("a queued file reached across a FUSE mount is kept, and the sweep asks the mount nothing")
    func sweepKeepsWithoutAsking() throws {
        let f = try Fixture()
        let path = try f.makeFile("u/mnt/x.bin")
        try f.hold(path, key: "k")
        try f.delete(ref("c", "k"))
        // The folder then covered by a client's mount.
        let fuse = try HangingFuse(f, at: f.root + "/u/mnt")
        defer { fuse.unmount() }
        let shared = Shared(value: f)
        let report = fuse.within { Shared(value: try? shared.value.store.sweep()) }
        #expect(report != nil, "the sweep hung on the mount")
        if let r = report?.value {
            #expect(r.unlinked.isEmpty && r.skipped.map(\.reason) == [.unsafePath], "\(r.unlinked) \(r.skipped)")
        }
        #expect(fuse.requests == 0)
        fuse.unmount()
        #expect(f.exists(path))
    }

    @Test("verify's orphan walk passes a FUSE mount in a root without asking it anything")
    func orphanWalkWithoutAsking() throws {
        let f = try Fixture()
        let orphan = try f.makeFile("d/orphan.bin")
        try setModificationTime(orphan, 0)
        let fuse = try HangingFuse(f, at: f.root + "/u/mnt")
        defer { fuse.unmount() }
        let shared = Shared(value: f)
        let found = fuse.within { () -> [String]? in
            guard let r = try? shared.value.verify(orphans: true) else { return nil }
            return r.of("orphan").compactMap { $0.subject["path"]?.stringValue }
        }
        #expect(found == [orphan], "\(String(describing: found))")
        #expect(fuse.requests == 0)
    }

    @Test("the folder a missing file's gone-ness is judged on is found without asking a FUSE mount")
    func deepestFolderWithoutAsking() throws {
        let f = try Fixture()
        let fuse = try HangingFuse(f, at: f.root + "/u/mnt")
        defer { fuse.unmount() }
        let root = f.root
        let roots = f.store.roots
        let device = fuse.within { VerifyRun.deepestFolderDevice(root + "/u/mnt/a/x.bin", root: root, roots: roots) }
        #expect(device != nil)
        #expect(fuse.requests == 0)
    }

    @Test("the open-file scan of /proc asks nothing of a FUSE mount a descriptor holds")
    func procScanWithoutAsking() throws {
        let f = try Fixture()
        let fuse = try HangingFuse(f, at: f.root + "/u/mnt")
        defer { fuse.unmount() }
        // O_PATH: opening the mount's root asks its server nothing.
        let held = open(f.root + "/u/mnt", SafeUnlinker.oPath | O_CLOEXEC)
        #expect(held >= 0)
        defer { close(held) }
        #expect(fuse.requests == 0)
        let scanned = fuse.within { ProcScan.read().files.count }
        #expect(scanned != nil, "the scan hung on the mount")
        #expect(fuse.requests == 0)
    }

    /// What the queued file's row records, and so which looks follow the mount check.
    enum Recorded: String, CaseIterable, Sendable {
        /// Birth time and generation (ext4): the generation is read.
        case generation
        /// ctime and size alone (as on NFS or FUSE): a synced statx.
        case ctimeAlone
        /// `files.skip_open`: the open check's open and lease, and the look after it.
        case skipOpen
    }

    @Test(
        "a FUSE file mounted over a queued file after its mount was checked is asked nothing, and the file kept",
        arguments: Recorded.allCases)
    func mountOverQueuedFile(_ recorded: Recorded) throws {
        let f = try Fixture { $0.skipOpenFiles = recorded == .skipOpen }
        let path = try f.makeFile("u/x.bin")
        try f.hold(path, key: "k")
        try f.delete(ref("c", "k"))
        if recorded == .ctimeAlone { try f.damage("UPDATE unlink_queue SET birth = NULL, generation = NULL") }
        // The client's mount lands in the window: once the unlinker has checked the name's
        // mount from the kernel's cache, before its next look.
        let shared = Shared(value: f)
        let mounted = Mutex<HangingFuse?>(nil)
        let reached = DispatchSemaphore(value: 0)
        SafeUnlinker.stepHooks.withLock {
            $0[f.root] = { at in
                guard mounted.withLock({ $0 == nil }) else { return }
                let fuse = try? HangingFuse(shared.value, file: at)
                mounted.withLock { $0 = fuse }
                reached.signal()
            }
        }
        SafeUnlinker.anyStepHook.store(true, ordering: .relaxed)
        defer { SafeUnlinker.stepHooks.withLock { $0[f.root] = nil } }
        let report = Mutex<SweepReport?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let swept = try? shared.value.store.sweep()
            report.withLock { $0 = swept }
            mounted.withLock { $0 }?.wake()
            reached.signal()  // for a sweep that never reached the window
            done.signal()
        }
        reached.wait()
        guard let fuse = mounted.withLock({ $0 }) else {
            done.wait()
            Issue.record("the sweep never reached the window, or the mount failed")
            return
        }
        // Bounded without a clock: the sweep returned, or it asked the mount (which a fixed
        // one never does); then the unmount answers it, and the sweep returns.
        let asked = fuse.waitAsked()
        fuse.unmount()
        done.wait()
        #expect(!asked, "the sweep asked the FUSE mount over the file")
        #expect(fuse.requests == 0)
        let swept = report.withLock { $0 }
        #expect(swept?.unlinked.isEmpty == true, "\(String(describing: swept?.unlinked))")
        #expect(f.exists(path))
    }
}
