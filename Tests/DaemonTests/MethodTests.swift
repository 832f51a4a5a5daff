// The object, edge, file, transact and template methods of assetd(8), CONTROL PROTOCOL, Methods,
// over the real socket of a built assetd: each success path with its result's shape, and each
// application error a client can provoke. Indexes and maintenance are in MethodTests+*.swift, wrong
// params in InvalidParamsTests.

import AssetClient
import AssetctlText
import AssetStore
import ControlProtocol
import Foundation
import Testing

/// The user name the daemon sees for this test process.
let processUserName: String = {
    guard let pw = getpwuid(getuid()), let name = pw.pointee.pw_name else { return String(getuid()) }
    return String(cString: name)
}()

@Suite("methods") struct MethodTests {
    // MARK: ping

    @Test("ping answers with assetd's version and the latest commit")
    func ping() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let version = try runAssetd(["--version"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let before = try c.call("ping")
        #expect(before["version"] == .string(version))
        #expect(before["commit"]?.intValue != nil)
        let commit = try c.putObject("p", "k")
        #expect(try c.call("ping")["commit"] == .int(commit))
    }

    // MARK: object.*

    @Test("object.put stores value, metadata and owner; object.get returns them with files and timestamps")
    func putAndGet() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let f = try h.makeFile("photos/a.jpg", size: 123)
        let t0 = Date().timeIntervalSince1970
        let first = try c.call(
            "object.put",
            [
                "collection": "photos", "key": "a", "value": ["file": .string(f), "n": 1], "metadata": ["m": true],
                "owner": "alice",
            ])
        let commit = try #require(first["commit"]?.intValue)
        let o = try c.getObject("photos", "a")
        #expect(o["collection"] == "photos")
        #expect(o["key"] == "a")
        #expect(o["value"] == ["file": .string(f), "n": 1])
        #expect(o["metadata"] == ["m": true])
        #expect(o["owner"] == "alice")
        let files = try #require(o["files"]?.arrayValue)
        #expect(files.count == 1)
        #expect(files.first?["path"] == .string(f))
        #expect(files.first?["size"] == 123)
        #expect(files.first?["missing"] == false)
        let created = try #require(o["created"]?.doubleValue)
        #expect(abs(created - t0) < 60)
        #expect(o["modified"]?.doubleValue == created)
        #expect(o["accessed"]?.doubleValue == created)

        passClock(created)
        let second = try c.putObject("photos", "a", ["n": 2])
        #expect(second > commit)
        let again = try c.getObject("photos", "a")
        #expect(again["value"] == ["n": 2])
        #expect(again["created"]?.doubleValue == created)
        #expect((again["modified"]?.doubleValue ?? 0) > created)
        #expect(again["files"] == [])
    }

    @Test("an object put without owner belongs to the client's user, or to the value's owner field")
    func defaultOwner() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        try c.putObject("o", "mine")
        try c.putObject("o", "field", ["owner": "carol"], owner: "dave")
        #expect(try c.getObject("o", "mine")["owner"] == .string(processUserName))
        #expect(try c.getObject("o", "field")["owner"] == "carol")
    }

    @Test("a file that does not exist yet may be referenced: size 0, marked missing")
    func missingFile() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let path = h.root + "/later.bin"
        try c.putObject("d", "later", ["file": .string(path)])
        let file = try c.getObject("d", "later")["files"]?.arrayValue?.first
        #expect(file?["path"] == .string(path))
        #expect(file?["size"] == 0)
        #expect(file?["missing"] == true)
    }

    @Test("file URLs are percent-decoded and paths normalised before they are compared")
    func pathNormalisation() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let f = try h.makeFile("sub/x y.bin", size: 7)
        try c.putObject("n", "url", ["file": .string("file://" + h.root + "/sub/x%20y.bin")])
        try c.putObject("n", "dots", ["file": .string(h.root + "//sub/./x y.bin")])
        #expect(try c.getObject("n", "url")["files"]?.arrayValue?.first?["path"] == .string(f))
        #expect(try c.getObject("n", "dots")["files"]?.arrayValue?.first?["path"] == .string(f))
        let report = try c.call("file.get", ["path": .string(f)])
        #expect(report["edges"]?.arrayValue?.count == 2, "both spellings are the same file")
    }

    @Test("object.get returns null for a missing object")
    func getMissing() throws {
        let h = try DaemonHarness()
        #expect(try h.client().getObject("none", "here") == .null)
    }

    @Test("object.get with touch moves accessed; without touch nothing moves")
    func getTouch() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        try c.putObject("t", "k")
        let created = try #require(c.getObject("t", "k")["accessed"]?.doubleValue)
        passClock(created)  // so that a get which moved accessed would show
        #expect(try c.getObject("t", "k")["accessed"]?.doubleValue == created)
        let touched = try c.call("object.get", ["collection": "t", "key": "k", "touch": true])
        let accessed = try #require(touched["accessed"]?.doubleValue)
        #expect(accessed > created, "the object returned already carries the new accessed time")
        #expect(touched["modified"]?.doubleValue == created)
        #expect(try c.getObject("t", "k")["accessed"]?.doubleValue == accessed)
        #expect(try c.call("object.get", ["collection": "t", "key": "none", "touch": true]) == .null)
    }

    @Test("object.touch sets accessed and answers the latest commit; touching a missing object is not_found")
    func touch() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let put = try c.putObject("t", "k")
        let created = try #require(c.getObject("t", "k")["accessed"]?.doubleValue)
        passClock(created)
        let r = try c.call("object.touch", ref("t", "k"))
        #expect((r["commit"]?.intValue ?? 0) >= put, "the access is written later, with its flush")
        #expect((try c.getObject("t", "k")["accessed"]?.doubleValue ?? 0) > created)
        expectRPCError(Code.application, "not_found") { () throws(ClientError) in
            try c.call("object.touch", ref("t", "none"))
        }
    }

    @Test("object.delete lists the object first, then what cascaded, and the unlinks queued; the files go soon after")
    func deleteWithCascade() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let fa = try h.makeFile("a.bin"), fb = try h.makeFile("b.bin")
        try c.putObject("d", "a", ["file": .string(fa)])
        try c.putObject("d", "b", ["file": .string(fb)])
        try c.putObject("d", "c")
        try c.addEdge("child", from: ref("d", "a"), to: ref("d", "b"), rules: ["deleteDestinationIfSourceDeleted"])
        try c.addEdge("child", from: ref("d", "b"), to: ref("d", "c"), rules: ["deleteDestinationIfSourceDeleted"])
        let r = try c.deleteObject("d", "a")
        #expect(r["commit"]?.intValue != nil)
        let deleted = r["deleted"]?.refTexts ?? []
        #expect(deleted.first == "d/a")
        #expect(Set(deleted.dropFirst()) == ["d/b", "d/c"])
        #expect(deleted.count == 3)
        #expect(Set(r["unlinks_queued"]?.strings ?? []) == [fa, fb])
        for key in ["a", "b", "c"] { #expect(try c.getObject("d", key) == .null) }
        #expect(eventually { !h.exists(fa) && !h.exists(fb) }, "files unlinked within 5 s")
    }

    @Test("a file shared by two objects stays until the second one is deleted")
    func sharedFile() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let f = try h.makeFile("shared.bin")
        try c.putObject("s", "one", ["file": .string(f)])
        try c.putObject("s", "two", ["file": .string(f)])
        #expect(try c.deleteObject("s", "one")["unlinks_queued"] == [])
        // A sweep runs every due unlink before it answers: had the first delete queued the
        // file, it would be gone now.
        #expect(try c.call("sweep")["unlinked"] == 0)
        #expect(h.exists(f))
        #expect(try c.deleteObject("s", "two")["unlinks_queued"] == [.string(f)])
        #expect(eventually { !h.exists(f) })
    }

    @Test("object.delete of a missing object is not_found")
    func deleteMissing() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        expectRPCError(Code.application, "not_found") { () throws(ClientError) in try c.deleteObject("d", "none") }
    }

    @Test("object.list pages through a collection in key order")
    func list() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        for i in [4, 0, 6, 2, 1, 5, 3] { try c.putObject("list", "k\(i)") }
        try c.putObject("other", "k9")
        let p1 = try c.call("object.list", ["collection": "list", "limit": 3])
        #expect(p1["keys"] == ["k0", "k1", "k2"])
        #expect(p1["next"] == "k2")
        let p2 = try c.call("object.list", ["collection": "list", "limit": 3, "after": "k2"])
        #expect(p2["keys"] == ["k3", "k4", "k5"])
        #expect(p2["next"] == "k5")
        let p3 = try c.call("object.list", ["collection": "list", "limit": 3, "after": "k5"])
        #expect(p3["keys"] == ["k6"])
        #expect(p3["next"] == .null)
        let all = try c.call("object.list", ["collection": "list"])
        #expect(all["keys"]?.strings == (0...6).map { "k\($0)" })
        #expect(all["next"] == .null)
        #expect(try c.call("object.list", ["collection": "empty"]) == ["keys": [], "next": .null])
    }

    // MARK: edge.*

    @Test("edge.add, edge.find and edge.count agree; adding the same triple again replaces its rules")
    func edges() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let f = try h.makeFile("e.bin")
        for k in ["s", "d1", "d2"] { try c.putObject("e", k) }
        let added = try c.addEdge("e1", from: ref("e", "s"), to: ref("e", "d1"), rules: ["notifyIfSourceDeleted"])
        #expect(added["commit"]?.intValue != nil)
        try c.addEdge("e1", from: ref("e", "s"), to: ref("e", "d2"), rules: [])
        try c.addEdge("e2", from: ref("e", "s"), to: ref("e", "d1"), rules: [])
        try c.addEdge(
            "f", from: ref("e", "s"), to: ["file": .string(f)], rules: ["deleteDestinationIfAllSourcesDeleted"])

        #expect(try c.call("edge.count", ["source": ref("e", "s")]) == ["count": 4])
        #expect(try c.call("edge.count", ["name": "e1"]) == ["count": 2])
        #expect(try c.call("edge.count", ["destination": ref("e", "d1")]) == ["count": 2])
        #expect(try c.call("edge.count", ["destination": ["file": .string(f)]]) == ["count": 1])
        #expect(try c.call("edge.count", [:]) == ["count": 4])

        let one = try c.call("edge.find", ["name": "e1", "source": ref("e", "s"), "destination": ref("e", "d1")])
        let edges = try #require(one["edges"]?.arrayValue)
        #expect(edges.count == 1)
        #expect(edges.first?["name"] == "e1")
        #expect(edges.first?["source"] == ref("e", "s"))
        #expect(edges.first?["destination"] == ref("e", "d1"))
        #expect(edges.first?["rules"] == ["notifyIfSourceDeleted"])
        #expect(edges.first?["kind"] == "manual")

        try c.addEdge("e1", from: ref("e", "s"), to: ref("e", "d1"), rules: ["notifyIfDestinationDeleted"])
        #expect(try c.call("edge.count", ["source": ref("e", "s")]) == ["count": 4])
        let replaced = try c.call("edge.find", ["name": "e1", "destination": ref("e", "d1")])["edges"]?.arrayValue
        #expect(replaced?.map { $0["rules"] } == [["notifyIfDestinationDeleted"]])

        let fileEdges = try c.call("edge.find", ["destination": ["file": .string(f)]])["edges"]?.arrayValue ?? []
        #expect(fileEdges.map { $0["name"] } == ["f"])
        #expect(try c.call("edge.find", ["name": "nothing"]) == ["edges": []])
    }

    @Test("the rules are accepted as the bitmask integer too")
    func rulesBitmask() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        for k in ["s", "d"] { try c.putObject("b", k) }
        try c.call("edge.add", ["name": "m", "source": ref("b", "s"), "destination": ref("b", "d"), "rules": 9])
        let e = try c.call("edge.find", ["name": "m"])["edges"]?.arrayValue?.first
        #expect(e?["rules"] == ["notifyIfSourceDeleted", "deleteDestinationIfSourceDeleted"])
    }

    @Test("edge.remove with reason edge fires nothing; sourceDeleted and destinationDeleted fire that side's rules")
    func edgeRemoveReasons() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        for k in ["s", "d"] { try c.putObject("r", k) }
        let edge: JSONValue = ["name": "own", "source": ref("r", "s"), "destination": ref("r", "d")]
        try c.addEdge("own", from: ref("r", "s"), to: ref("r", "d"), rules: ["deleteDestinationIfSourceDeleted"])

        let plain = try c.call("edge.remove", edge)
        #expect(plain["removed"] == true)
        #expect(plain["commit"]?.intValue != nil)
        #expect(try c.getObject("r", "d") != .null, "reason edge fires nothing")
        #expect(try c.call("edge.remove", edge)["removed"] == false)

        try c.addEdge("own", from: ref("r", "s"), to: ref("r", "d"), rules: ["deleteDestinationIfSourceDeleted"])
        var bySource = edge.objectValue!
        bySource["reason"] = "sourceDeleted"
        #expect(try c.call("edge.remove", .object(bySource))["removed"] == true)
        #expect(try c.getObject("r", "d") == .null, "sourceDeleted fires deleteDestinationIfSourceDeleted")
        #expect(try c.getObject("r", "s") != .null)

        for k in ["s2", "d2"] { try c.putObject("r", k) }
        try c.addEdge("dep", from: ref("r", "s2"), to: ref("r", "d2"), rules: ["deleteSourceIfDestinationDeleted"])
        let byDestination: JSONValue = [
            "name": "dep", "source": ref("r", "s2"), "destination": ref("r", "d2"), "reason": "destinationDeleted",
        ]
        #expect(try c.call("edge.remove", byDestination)["removed"] == true)
        #expect(try c.getObject("r", "s2") == .null, "destinationDeleted fires deleteSourceIfDestinationDeleted")
        #expect(try c.getObject("r", "d2") != .null)
    }

    @Test(
        "illegal rule combinations are invalid_rules, naming the pair",
        arguments: [
            (["deleteDestinationIfSourceDeleted", "deleteDestinationIfAllSourcesDeleted"], false),
            (["deleteSourceIfDestinationDeleted", "deleteSourceIfAllDestinationsDeleted"], false),
            (["denyDeleteDestination", "notifyIfDestinationDeleted"], false),
            (["denyDeleteSource", "deleteDestinationIfSourceDeleted"], false),
            (["notifyIfSourceDeleted"], true),
            (["denyDeleteDestination"], true),
        ])
    func invalidRules(rules: [String], toFile: Bool) throws {
        let h = try DaemonHarness()
        let c = try h.client()
        for k in ["s", "d"] { try c.putObject("i", k) }
        let destination: JSONValue = toFile ? ["file": .string(try h.makeFile("i.bin"))] : ref("i", "d")
        let e = expectRPCError(Code.application, "invalid_rules") { () throws(ClientError) in
            try c.addEdge("bad", from: ref("i", "s"), to: destination, rules: rules)
        }
        for rule in rules { #expect(e?.message.contains(rule) == true, "\(e?.message ?? "")") }
        #expect(try c.call("edge.count", ["source": ref("i", "s")]) == ["count": 0])
    }

    @Test("an edge to an object that does not exist fails with dangling_edge and leaves nothing")
    func danglingEdge() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        try c.putObject("g", "s")
        let before = try c.call("ping")["commit"]
        expectRPCError(Code.application, "dangling_edge") { () throws(ClientError) in
            try c.addEdge("to", from: ref("g", "s"), to: ref("g", "ghost"), rules: ["deleteDestinationIfSourceDeleted"])
        }
        expectRPCError(Code.application, "dangling_edge") { () throws(ClientError) in
            try c.addEdge("from", from: ref("g", "ghost"), to: ref("g", "s"), rules: [])
        }
        #expect(try c.call("edge.count", [:]) == ["count": 0])
        #expect(try c.call("ping")["commit"] == before)
        #expect(try c.getObject("g", "s") != .null)
    }

    @Test("a delete blocked by a deny edge is delete_denied, naming the edge; deleting both ends at once is allowed")
    func deleteDenied() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        for k in ["s", "d"] { try c.putObject("deny", k) }
        try c.addEdge("guardian", from: ref("deny", "s"), to: ref("deny", "d"), rules: ["denyDeleteSource"])
        let e = expectRPCError(Code.application, "delete_denied") { () throws(ClientError) in
            try c.deleteObject("deny", "s")
        }
        #expect(
            e.map { $0.message.contains("guardian") || ($0.data?.serialized().contains("guardian") ?? false) } == true)
        #expect(try c.getObject("deny", "s") != .null)
        #expect(try c.call("edge.count", ["name": "guardian"]) == ["count": 1])
        let both = try c.call(
            "transact",
            [
                "ops": [
                    ["method": "object.delete", "params": ref("deny", "s")],
                    ["method": "object.delete", "params": ref("deny", "d")],
                ]
            ])
        #expect(Set(both["deleted"]?.refTexts ?? []) == ["deny/s", "deny/d"])
    }

    // MARK: files and paths

    /// A path the daemon must refuse, and the code it refuses it with.
    struct BadPath: CustomTestStringConvertible, Sendable {
        var label: String
        var code: String
        /// Makes what is needed below `root` and returns the path to offer.
        var make: @Sendable (_ root: String) throws -> String
        var testDescription: String { label }
    }

    static let badPaths: [BadPath] = [
        BadPath(label: "a .. segment", code: "invalid_path") { $0 + "/a/../b.bin" },
        BadPath(label: "outside every root", code: "path_outside_roots") { _ in "/etc/hostname" },
        BadPath(label: "a directory", code: "not_a_regular_file") { root in
            try FileManager.default.createDirectory(atPath: root + "/dir", withIntermediateDirectories: true)
            return root + "/dir"
        },
        BadPath(label: "a symlink to a file", code: "not_a_regular_file") { root in
            #expect(FileManager.default.createFile(atPath: root + "/target", contents: Data([1])))
            try FileManager.default.createSymbolicLink(atPath: root + "/link", withDestinationPath: root + "/target")
            return root + "/link"
        },
        BadPath(label: "a symlinked folder below the root", code: "unsafe_path") { root in
            try FileManager.default.createDirectory(atPath: root + "/real", withIntermediateDirectories: true)
            #expect(FileManager.default.createFile(atPath: root + "/real/f", contents: Data([1])))
            try FileManager.default.createSymbolicLink(atPath: root + "/alias", withDestinationPath: root + "/real")
            return root + "/alias/f"
        },
    ]

    @Test("file paths are judged the same by object.put and edge.add", arguments: badPaths)
    func badPath(_ bad: BadPath) throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let path = try bad.make(h.root)
        expectRPCError(Code.application, bad.code) { () throws(ClientError) in
            try c.call("object.put", ["collection": "p", "key": "k", "value": ["file": .string(path)]])
        }
        #expect(try c.getObject("p", "k") == .null)
        try c.putObject("p", "s")
        expectRPCError(Code.application, bad.code) { () throws(ClientError) in
            try c.addEdge("f", from: ref("p", "s"), to: ["file": .string(path)], rules: [])
        }
        #expect(try c.call("edge.count", [:]) == ["count": 0])
    }

    @Test("file.get shows the registry row and the edges that keep the file; an unknown file is null")
    func fileGet() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let f = try h.makeFile("why.bin", size: 42)
        try c.putObject("w", "a", ["file": .string(f)])
        try c.putObject("w", "b", ["file": .string(f)])
        try c.addEdge("weak", from: ref("w", "a"), to: ["file": .string(f)], rules: [])
        let r = try c.call("file.get", ["path": .string(f)])
        #expect(r["file"]?["path"] == .string(f))
        #expect(r["file"]?["size"] == 42)
        #expect(r["file"]?["missing"] == false)
        #expect(r["file"]?["inode"]?.intValue != nil)
        let edges = try #require(r["edges"]?.arrayValue)
        #expect(
            Set(edges.map { "\($0["name"]?.stringValue ?? "") \(Formatting.cell($0["source"] ?? .null))" }) == [
                "file w/a", "file w/b", "weak w/a",
            ])
        #expect(r["retained_by"] == 2, "only edges with deleteDestinationIfAllSourcesDeleted retain")
        #expect(try c.call("file.get", ["path": .string(h.root + "/never.bin")]) == .null)
    }

    // MARK: transact

    @Test("transact is all or nothing: a failing op rolls back the ops before it")
    func transactRollsBack() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let f = try h.makeFile("t.bin")
        try c.putObject("t", "old", ["file": .string(f)])
        let before = try c.call("ping")["commit"]
        let e = expectRPCError(Code.application, "not_found") { () throws(ClientError) in
            try c.call(
                "transact",
                [
                    "ops": [
                        ["method": "object.put", "params": ["collection": "t", "key": "a", "value": [:]]],
                        ["method": "object.put", "params": ["collection": "t", "key": "b", "value": [:]]],
                        [
                            "method": "edge.add",
                            "params": [
                                "name": "x", "source": ref("t", "a"), "destination": ref("t", "b"), "rules": [],
                            ],
                        ],
                        ["method": "object.delete", "params": ref("t", "old")],
                        ["method": "object.delete", "params": ref("t", "missing")],
                    ]
                ])
        }
        #expect(e?.message.contains("ops[4]") == true, "\(e?.message ?? "")")
        #expect(try c.getObject("t", "a") == .null)
        #expect(try c.getObject("t", "b") == .null)
        #expect(try c.getObject("t", "old") != .null)
        #expect(try c.call("edge.count", [:]) == ["count": 1], "only old's file edge")
        #expect(try c.call("pending", [:]) == ["pending": []])
        #expect(try c.call("ping")["commit"] == before)
        #expect(try c.call("sweep")["unlinked"] == 0)
        #expect(h.exists(f))

        expectRPCError(Code.application, "dangling_edge") { () throws(ClientError) in
            try c.call(
                "transact",
                [
                    "ops": [
                        ["method": "object.put", "params": ["collection": "t", "key": "c", "value": [:]]],
                        [
                            "method": "edge.add",
                            "params": [
                                "name": "x", "source": ref("t", "c"), "destination": ref("t", "ghost"),
                                "rules": ["deleteSourceIfDestinationDeleted"],
                            ],
                        ],
                    ]
                ])
        }
        #expect(try c.getObject("t", "c") == .null)
    }

    @Test("transact answers one result per op in order, and edges may name objects created later in it")
    func transactResults() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let r = try c.call(
            "transact",
            [
                "ops": [
                    [
                        "method": "edge.add",
                        "params": [
                            "name": "early", "source": ref("x", "a"), "destination": ref("x", "b"), "rules": [],
                        ],
                    ],
                    ["method": "object.put", "params": ["collection": "x", "key": "a", "value": ["v": 1]]],
                    ["method": "object.put", "params": ["collection": "x", "key": "b", "value": [:]]],
                    ["method": "object.get", "params": ref("x", "a")],
                    ["method": "edge.count", "params": ["name": "early"]],
                    ["method": "object.list", "params": ["collection": "x"]],
                ]
            ])
        let results = try #require(r["results"]?.arrayValue)
        #expect(results.count == 6)
        #expect(results[3]["value"] == ["v": 1])
        #expect(results[5]["keys"] == ["a", "b"])
        #expect(r["commit"]?.intValue != nil)
        #expect(try c.call("edge.count", ["name": "early"]) == ["count": 1])
    }

    @Test("transact's flush runs the rules early, so the ops after it see the cascade")
    func transactFlush() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let r = try c.call(
            "transact",
            [
                "ops": [
                    ["method": "object.put", "params": ["collection": "f", "key": "p", "value": [:]]],
                    ["method": "object.put", "params": ["collection": "f", "key": "q", "value": [:]]],
                    [
                        "method": "edge.add",
                        "params": [
                            "name": "own", "source": ref("f", "p"), "destination": ref("f", "q"),
                            "rules": ["deleteDestinationIfSourceDeleted"],
                        ],
                    ],
                    ["method": "object.delete", "params": ref("f", "p")],
                    ["method": "object.get", "params": ref("f", "q")],
                    ["method": "flush", "params": [:]],
                    ["method": "object.get", "params": ref("f", "q")],
                ]
            ])
        let results = try #require(r["results"]?.arrayValue)
        #expect(results.count == 7)
        #expect(results[4]["key"] == "q", "before the flush the cascade has not run")
        #expect(results[6] == .null, "after the flush it has")
        #expect(try c.getObject("f", "q") == .null)
    }

    @Test("a key deleted and put again in one transaction keeps its file, with or without a flush between")
    func deleteAndPutAgain() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let f = try h.makeFile("again.bin")
        try c.putObject("a", "x", ["file": .string(f)])
        for flush in [false, true] {
            var ops: [JSONValue] = [["method": "object.delete", "params": ref("a", "x")]]
            if flush { ops.append(["method": "flush"]) }
            ops.append([
                "method": "object.put", "params": ["collection": "a", "key": "x", "value": ["file": .string(f)]],
            ])
            let r = try c.call("transact", ["ops": .array(ops)])
            if !flush { #expect(r["unlinks_queued"] == [], "without flush it is an update") }
            try c.call("sweep")
            #expect(h.exists(f), "flush: \(flush)")
            #expect(try c.call("pending", [:]) == ["pending": []])
            #expect(try c.getObject("a", "x")["files"]?.arrayValue?.count == 1)
        }
    }

    // MARK: templates

    @Test("template.set replaces a collection's templates, template.get returns them, and objects derive edges")
    func templates() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let template: JSONValue = [
            "name": "original", "field": "originalKey", "to": "originals",
            "rules": ["deleteSourceIfDestinationDeleted"],
        ]
        let set = try c.call("template.set", ["collection": "thumbs", "edges": [template]])
        #expect(set["commit"]?.intValue != nil)
        let got = try c.call("template.get", ["collection": "thumbs"])
        #expect(got["collection"] == "thumbs")
        #expect(got["edges"] == [template])

        try c.putObject("originals", "o1")
        try c.putObject("thumbs", "t1", ["originalKey": "o1"])
        let derived = try c.call("edge.find", ["source": ref("thumbs", "t1")])["edges"]?.arrayValue ?? []
        #expect(derived.count == 1)
        #expect(derived.first?["kind"] == "derived")
        #expect(derived.first?["destination"] == ref("originals", "o1"))
        let r = try c.deleteObject("originals", "o1")
        #expect(r["deleted"]?.refTexts == ["originals/o1", "thumbs/t1"])

        try c.call("template.set", ["collection": "thumbs", "edges": []])
        #expect(try c.call("template.get", ["collection": "thumbs"])["edges"] == [])
    }

    @Test("template.set re-derives the edges of the collection's existing objects")
    func templateRederives() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        try c.putObject("originals", "o1")
        try c.putObject("thumbs", "t1", ["originalKey": "o1"])
        #expect(try c.call("edge.count", ["source": ref("thumbs", "t1")]) == ["count": 0])
        try c.call(
            "template.set",
            [
                "collection": "thumbs",
                "edges": [
                    ["name": "original", "field": "originalKey", "to": "originals", "rules": []]
                ],
            ])
        #expect(try c.call("edge.count", ["source": ref("thumbs", "t1")]) == ["count": 1])
    }

    @Test("template.set refuses illegal rules with invalid_rules and keeps the old templates")
    func templateInvalidRules() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        expectRPCError(Code.application, "invalid_rules") { () throws(ClientError) in
            try c.call(
                "template.set",
                [
                    "collection": "x",
                    "edges": [
                        ["name": "f", "field": "path", "to": "file", "rules": ["denyDeleteSource"]]
                    ],
                ])
        }
        #expect(try c.call("template.get", ["collection": "x"])["edges"] == [])
    }
}
