// Files under a pin or a lease are never evicted or expired (assetd(8), DATA MODEL, Lifecycle
// policies). A pin, an object lease or min_age protects the object's files too: a policy that
// deletes another object whose rule would delete such a file (deleteDestinationIfSourceDeleted)
// leaves it, and the file, alone.

import AssetStore
import AssetStoreTestSupport
import Foundation
import Testing

/// How the surviving holder of the shared file is protected.
enum HolderProtection: String, CaseIterable, Sendable {
    case pin
    case objectLease
    /// Younger than min_age.
    case young
}

@Suite("policies and the files of protected objects")
struct PolicyFileProtectionTests {
    @Test(
        "expiring an object whose rule deletes a file a pinned, leased or young object holds keeps the file",
        arguments: HolderProtection.allCases)
    func strongRuleToProtectedHoldersFile(protection: HolderProtection) throws {
        let f = try Fixture()
        let path = try f.makeFile("shared.bin", size: 40)
        let owner = ref("c", "a")
        let holder = ref("c", "b")
        try f.store.write { tx in
            try tx.put(owner, value: [:])
            try tx.addEdge(
                name: "owns", source: owner, destination: .file(path), rules: .deleteDestinationIfSourceDeleted)
            if protection != .young { try tx.put(holder, value: ["file": .string(path)]) }
            if protection == .pin { try tx.pin(holder) }
        }
        var lease: Lease?
        if protection == .objectLease {
            lease = try f.store.leases.acquire(objects: [holder], files: [], ttl: 86_400)
        }
        f.clock.advance(3600)  // past min_age; the lease still lives
        if protection == .young { try f.store.write { tx in try tx.put(holder, value: ["file": .string(path)]) } }

        let plan = try f.store.expire(collection: nil, olderThan: 60, idle: nil)
        #expect(plan.files.isEmpty, "the plan unlinks the protected holder's file")
        _ = try f.store.sweep()
        #expect(f.exists(path))
        #expect(try f.store.read { try $0.file(path) }?.edges.map(\.source).contains(holder) == true)
        #expect(try f.exists(holder))
        _ = lease
    }

    @Test("a pinned object's weak edge does not keep a file: expiring its owner unlinks it")
    func weakEdgeDoesNotProtect() throws {
        let f = try Fixture()
        let path = try f.makeFile("owned.bin", size: 40)
        try f.store.write { tx in
            try tx.put(ref("c", "a"), value: ["file": .string(path)])
            try tx.put(ref("c", "watcher"), value: [:])
            try tx.addEdge(
                name: "watch", source: ref("c", "watcher"), destination: .file(path), rules: .notifyIfDestinationDeleted
            )
            try tx.pin(ref("c", "watcher"))
        }
        f.clock.advance(3600)
        let plan = try f.store.expire(collection: nil, olderThan: 60, idle: nil)
        #expect(plan.objects.map(\.ref) == [ref("c", "a")])
        #expect(plan.files == [path])
        #expect(try f.store.sweep().unlinked == [path])
        #expect(try f.exists(ref("c", "watcher")))
    }

    @Test("a pinned holder whose key equals the evicted object's as a String but not in bytes still protects the file")
    func canonicallyEqualKeys() throws {
        let f = try Fixture()
        let path = try f.makeFile("shared.bin", size: 40)
        // "ǻ" precomposed and decomposed: equal Strings, different keys (SQLite compares bytes).
        let owner = ref("c", "\u{1FB}")
        let holder = ref("c", "a\u{30A}\u{301}")
        try f.store.write { tx in
            try tx.put(owner, value: [:])
            try tx.addEdge(
                name: "owns", source: owner, destination: .file(path), rules: .deleteDestinationIfSourceDeleted)
            try tx.put(holder, value: ["file": .string(path)])
            try tx.pin(holder)
        }
        f.clock.advance(3600)
        let plan = try f.store.expire(collection: nil, olderThan: 60, idle: nil)
        #expect(plan.files.isEmpty)
        _ = try f.store.sweep()
        #expect(f.exists(path))
    }
}
