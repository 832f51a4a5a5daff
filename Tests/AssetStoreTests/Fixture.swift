// A store in a fresh temp folder with one managed root, plus helpers to make real files.

import Foundation
import Glibc
import Synchronization
@testable import AssetStore

/// A test clock: starts at a fixed time and moves only when told.
final class TestClock: Sendable {
    private let t = Mutex(1_800_000_000.0)
    var now: Double { t.withLock { $0 } }
    func advance(_ seconds: Double) { t.withLock { $0 += seconds } }
}

final class Fixture {
    let dir: String
    let root: String
    let dbPath: String
    let clock = TestClock()
    var store: Store!

    init(configure: (inout StoreConfiguration) -> Void = { _ in }) throws {
        var template = Array("/tmp/assetd-test-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { fatalError("mkdtemp failed") }
        dir = String(cString: template)
        root = dir + "/root"
        dbPath = dir + "/state/assetd.sqlite"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        configuration = StoreConfiguration(roots: [root])
        let clock = self.clock
        configuration.clock = { clock.now }
        configure(&configuration)
        store = try Store(path: dbPath, configuration: configuration)
    }

    var configuration: StoreConfiguration

    deinit {
        store?.close()
        _ = try? FileManager.default.removeItem(atPath: dir)
    }

    /// Closes and opens the store again (as a restart would).
    func reopen(drain: Bool = true) throws {
        store.close()
        var c = configuration
        c.drainOnOpen = drain
        store = try Store(path: dbPath, configuration: c)
    }

    /// Creates a file of `size` bytes below the root and returns its path.
    @discardableResult
    func makeFile(_ relative: String, size: Int = 10) throws -> String {
        let path = root + "/" + relative
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: path, contents: Data(repeating: 7, count: size)) else {
            fatalError("cannot create \(path)")
        }
        return path
    }

    func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// Puts objects in one transaction.
    @discardableResult
    func put(_ objects: [(ObjectRef, JSONValue)], owner: String? = nil) throws -> CommitReport {
        try store.write { tx in
            for (ref, value) in objects { try tx.put(ref, value: value, owner: owner) }
        }.report
    }

    @discardableResult
    func delete(_ refs: ObjectRef...) throws -> CommitReport {
        try store.write { tx in for r in refs { try tx.delete(r) } }.report
    }

    func exists(_ ref: ObjectRef) throws -> Bool { try store.read { try $0.exists(ref) } }

    func count(_ filter: EdgeFilter) throws -> Int { try store.read { try $0.edgeCount(filter) } }
}

func ref(_ c: String, _ k: String) -> ObjectRef { ObjectRef(c, k) }

/// Throws unless `body` throws a StoreError with `code`.
func expectCode<T>(_ code: StoreError.Code, _ body: () throws -> T) -> StoreError? {
    do {
        _ = try body()
    } catch let e as StoreError {
        return e.code == code ? e : nil
    } catch {
        return nil
    }
    return nil
}
