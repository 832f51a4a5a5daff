// Set-based policy deletes where files are shared: inside one batch, across batches, with an
// object outside the batch or in another collection, over two edges of one object, and at
// paths that differ only in their last bytes. Whichever path deletes, and at any batch size,
// a file goes once, only when its last holder went, and each byte is counted once.

import Foundation
import GRDB
import Testing
@testable import AssetStore
import AssetStoreTestSupport

/// A store where every file of `assets` is shared some way; `assets` is two hours old, the
/// rest young or outside the expired collection.
private let names = ["both", "young", "twice", "other", "nfc", "nfd", "short", "shorter"]

/// Each file's size: distinct powers of two, so a sum names its files.
private func size(_ name: String) -> Int { 1 << (names.firstIndex(of: name)! + 2) }

private func sharingStore(setBased: Bool) throws -> (Fixture, [String: String]) {
    let f = try Fixture { $0.setBasedPolicyDeletes = setBased }
    var p = [String: String]()
    for n in names {
        let rel: String
        switch n {
        case "nfc": rel = "u/caf\u{E9}.bin"
        case "nfd": rel = "u/cafe\u{301}.bin"
        case "short": rel = "v/ab"
        case "shorter": rel = "v/a"
        default: rel = "d/\(n).bin"
        }
        p[n] = try f.makeFile(rel, size: size(n))
    }
    try f.store.write { tx in
        try tx.put(ref("assets", "a"), value: ["file": .array([.string(p["both"]!), .string(p["young"]!)])])
        try tx.addEdge(
            name: "h1", source: ref("assets", "a"), destination: .file(p["twice"]!),
            rules: .deleteDestinationIfAllSourcesDeleted)
        try tx.addEdge(
            name: "h2", source: ref("assets", "a"), destination: .file(p["twice"]!),
            rules: .deleteDestinationIfAllSourcesDeleted)
        try tx.put(ref("assets", "b"), value: ["file": .array([.string(p["both"]!), .string(p["other"]!)])])
        try tx.put(ref("other", "d"), value: ["file": .string(p["other"]!)])
        try tx.put(ref("assets", "c"), value: ["file": .array([.string(p["nfc"]!), .string(p["short"]!)])])
        try tx.put(ref("assets", "e"), value: ["file": .array([.string(p["nfd"]!), .string(p["shorter"]!)])])
        try tx.put(ref("assets", "z"), value: ["note": "no file"])
    }
    f.clock.advance(7200)
    try f.store.write { tx in try tx.put(ref("young", "y"), value: ["file": .string(p["young"]!)]) }
    return (f, p)
}

@Suite struct BatchDeleteSharingTests {
    @Test(
        "expiry frees a shared file once, with its last holder, and counts each byte once at any batch size",
        arguments: [1000, 2, 1])
    func sharedFiles(batch: Int) throws {
        var plans = [String]()
        for setBased in [false, true] {
            let (f, p) = try sharingStore(setBased: setBased)
            var policy = PolicyConfiguration()
            policy.batch = batch
            f.store.policy = policy
            let dry = try f.store.expire(collection: "assets", olderThan: 3600, idle: nil, dryRun: true)
            let plan = try f.store.expire(collection: "assets", olderThan: 3600, idle: nil)
            #expect("\(dry.objects)" == "\(plan.objects)" && dry.files == plan.files && dry.bytes == plan.bytes)
            #expect(Set(plan.objects.map(\.ref.key)) == ["a", "b", "c", "e", "z"])
            // Each path exactly once, by its bytes: é composed and decomposed are two files.
            let gone = ["both", "twice", "nfc", "nfd", "short", "shorter"]
            #expect(
                plan.files.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
                    == gone.map { Array(p[$0]!.utf8) }.sorted { $0.lexicographicallyPrecedes($1) })
            #expect(plan.bytes == Int64(gone.map(size).reduce(0, +)))
            #expect(plan.objects.map(\.bytes).reduce(0, +) == plan.bytes, "objects' bytes add up to the total")
            // Held by an object that stays (young, or in another collection): registered, not queued.
            for kept in ["young", "other"] {
                #expect(try f.store.read { try $0.file(p[kept]!) }?.edges.count == 1, "\(kept)")
            }
            let left = try f.store.read { r in try Int.fetchOne(r.db, sql: "SELECT COUNT(*) FROM file") }
            #expect(left == 2, "only the two held files stay registered: none leaked")
            _ = try f.store.sweep()
            // Earlier batches' files were unlinked beside later batches; now all of them are.
            let queued = try f.store.read { r in try Int.fetchOne(r.db, sql: "SELECT COUNT(*) FROM unlink_queue") }
            #expect(queued == 0)
            for n in gone { #expect(!f.exists(p[n]!), "\(n)") }
            for n in ["young", "other"] { #expect(f.exists(p[n]!), "\(n)") }
            plans.append("\(plan.objects) \(plan.files) \(plan.bytes)".replacingOccurrences(of: f.dir, with: "<dir>"))
        }
        #expect(plans[0] == plans[1], "the worklist and the set-based path plan the same")
    }

    @Test("paths compare by all their bytes: empty, a prefix, the last byte, composed and decomposed")
    func pathBytes() {
        let long = String(repeating: "d/", count: 40) + "file.bin"  // not a small string
        #expect(UTF8Key.same("", ""))
        #expect(!UTF8Key.same("", "a") && !UTF8Key.same("a", ""))
        #expect(!UTF8Key.same("v/a", "v/ab") && !UTF8Key.same("v/ab", "v/a"))
        #expect(!UTF8Key.same("v/ab", "v/ac") && UTF8Key.same("v/ab", "v/" + "ab"))
        #expect(
            !UTF8Key.same(long, long.dropLast() + "m")
                && UTF8Key.same(long, String(decoding: Array(long.utf8), as: UTF8.self)))
        #expect("caf\u{E9}" == "cafe\u{301}" && !UTF8Key.same("caf\u{E9}", "cafe\u{301}"))
        #expect(Set([UTF8Key("caf\u{E9}"), UTF8Key("cafe\u{301}"), UTF8Key("caf\u{E9}")]).count == 2)
    }
}
