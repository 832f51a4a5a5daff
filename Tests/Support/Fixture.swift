// A store in a fresh temp folder with one managed root, plus helpers to make real files.

import Foundation
import Glibc
import Synchronization
import AssetStore

/// A test clock: starts at a fixed time and moves only when told. Its wall clock (`now`)
/// and its steady clock move together as time passes (`advance`); `step` moves the wall
/// clock alone, as NTP's first sync or `date -s` does.
public final class TestClock: Sendable {
    private let t = Mutex((wall: 1_800_000_000.0, steady: 1_000.0))
    public init() {}
    public var now: Double { t.withLock { $0.wall } }
    public var steady: Double { t.withLock { $0.steady } }
    public func advance(_ seconds: Double) {
        t.withLock {
            $0.wall += seconds
            $0.steady += seconds
        }
    }
    public func step(_ seconds: Double) { t.withLock { $0.wall += seconds } }
}

public final class Fixture {
    public let dir: String
    public let root: String
    public let dbPath: String
    public let clock = TestClock()
    public var store: Store!

    public init(configure: (inout StoreConfiguration) -> Void = { _ in }) throws {
        var template = Array("/tmp/assetd-test-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { fatalError("mkdtemp failed") }
        dir = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }  // mkdtemp wrote a C string
        root = dir + "/root"
        dbPath = dir + "/state/assetd.sqlite"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        configuration = StoreConfiguration(roots: [root])
        let clock = self.clock
        configuration.clock = { clock.now }
        configuration.steadyClock = { clock.steady }
        configure(&configuration)
        store = try Store(path: dbPath, configuration: configuration)
    }

    public var configuration: StoreConfiguration

    deinit {
        store?.close()
        _ = try? FileManager.default.removeItem(atPath: dir)
    }

    /// Closes and opens the store again (as a restart would).
    public func reopen(drain: Bool = true) throws {
        store.close()
        var c = configuration
        c.drainOnOpen = drain
        store = try Store(path: dbPath, configuration: c)
    }

    /// Writes assetd's CACHEDIR.TAG into every outermost root, as assetd does in a root it
    /// creates (a nested root is covered by its outer root's tag): verify --delete-orphans
    /// unlinks only in tagged roots.
    public func tagRoots() {
        let roots = configuration.roots
        for r in roots where !roots.contains(where: { r.utf8.starts(with: ($0 + "/").utf8) }) {
            precondition(CacheDirectoryTag.write(in: r) == nil, "cannot tag \(r)")
        }
    }

    /// Creates a file of `size` bytes below the root and returns its path.
    @discardableResult
    public func makeFile(_ relative: String, size: Int = 10) throws -> String {
        let path = root + "/" + relative
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: path, contents: Data(repeating: 7, count: size)) else {
            fatalError("cannot create \(path)")
        }
        return path
    }

    public func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// Puts objects in one transaction.
    @discardableResult
    public func put(_ objects: [(ObjectRef, JSONValue)], owner: String? = nil) throws -> CommitReport {
        try store.write { tx in
            for (ref, value) in objects { try tx.put(ref, value: value, owner: owner) }
        }.report
    }

    @discardableResult
    public func delete(_ refs: ObjectRef...) throws -> CommitReport {
        try store.write { tx in for r in refs { try tx.delete(r) } }.report
    }

    public func exists(_ ref: ObjectRef) throws -> Bool { try store.read { try $0.exists(ref) } }

    public func count(_ filter: EdgeFilter) throws -> Int { try store.read { try $0.edgeCount(filter) } }
}

public func ref(_ c: String, _ k: String) -> ObjectRef { ObjectRef(c, k) }

/// The error if `body` throws a StoreError with `code`, else nil.
public func expectCode<T>(_ code: StoreError.Code, _ body: () throws -> T) -> StoreError? {
    do {
        _ = try body()
    } catch let e as StoreError {
        return e.code == code ? e : nil
    } catch {
        return nil
    }
    return nil
}
