// What assetctl prints for values a first-time user gives it: file:// URLs, JSON values and
// metadata in query tables, index text columns as plain text, transact's deletions, and every
// edge however many pages they take.

import AssetClient
import AssetStore
import Foundation
import Testing

extension CLITests {
    @Test("a file:// URL given to --file or file reaches the daemon as a URL, not glued to the working folder")
    func fileURL() throws {
        let h = try DaemonHarness()
        let f = try h.makeFile("media/a.mp4", size: 10)
        let put = try h.assetctl("put", "media", "a", "--file", "file://" + f)
        #expect(put.status == 0, "\(put.stderr)")
        let file = try h.assetctl("--json", "file", "file://" + f)
        #expect(file.status == 0, "\(file.stderr)")
        #expect(try JSONValue.parse(file.stdout)["file"]?["path"] == .string(f))
    }

    @Test("query --include objects shows each value and metadata as its JSON, a {file} value too")
    func queryObjectsShowJSON() throws {
        let h = try DaemonHarness()
        let f = try h.makeFile("media/a.mp4", size: 10)
        #expect(try h.assetctl("put", "media", "a", "--file", f, "--meta", #"{"m":1}"#).status == 0)
        #expect(try h.assetctl("put", "media", "b", #""just text""#).status == 0)
        let r = try h.assetctl("query", "--include", "objects", "WHERE collection = ? ORDER BY key", "media")
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n")
        #expect(lines.count == 3, "\(r.stdout)")
        #expect(lines.count == 3 && lines[1].hasSuffix(#"{"file":"\#(f)"}  {"m":1}"#), "\(r.stdout)")
        #expect(lines.count == 3 && lines[2].contains(#"  "just text"  "#) && lines[2].hasSuffix("  -"), "\(r.stdout)")
    }

    @Test("query --include rows of an index with a text column named value shows the text as it is, no JSON quotes")
    func queryRowsValueColumnIsText() throws {
        let h = try DaemonHarness(
            extraConfig: """
                [[indexes]]
                name = "labels"
                version = "1"
                columns = [ { name = "value", type = "text", path = "$.label" } ]
                """)
        #expect(try h.assetctl("put", "media", "a", #"{"label":"sunset"}"#).status == 0)
        let r = try h.assetctl("query", "--index", "labels", "--include", "rows", "WHERE value = ?", "sunset")
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n")
        #expect(lines.count == 2 && lines[1].hasSuffix("  sunset"), "\(r.stdout)")
    }

    @Test("transact prints what it deleted and queued, as rm does, and each op's result that says something")
    func transactPrintsDeletions() throws {
        let h = try DaemonHarness()
        let f = try h.makeFile("media/a.mp4", size: 10)
        #expect(try h.assetctl("put", "media", "a", "--file", f).status == 0)
        let ops = #"""
            [{"method":"object.delete","params":{"collection":"media","key":"a"}},
             {"method":"edge.remove","params":{"name":"n","source":{"collection":"media","key":"b"},
               "destination":{"collection":"media","key":"c"}}}]
            """#
        let r = try h.assetctl("transact", "-", stdin: ops)
        #expect(r.status == 0, "\(r.stderr)")
        let commit = try h.client().call("ping")["commit"]?.intValue ?? -1
        #expect(r.stdout == "commit \(commit)\ndeleted media/a\nqueued \(f)\nops[1]: {\"removed\":false}\n")
    }

    @Test("edge ls prints every edge when the whole list passes max_reply_bytes, which edge.find refuses")
    func edgeListPages() throws {
        let h = try DaemonHarness(controlSection: #"max_reply_bytes = "1KiB""#)
        let c = try h.client()
        for k in ["s", "d"] { try c.putObject("e", k) }
        var ops = [JSONValue]()
        for i in 0..<30 {
            ops.append([
                "method": "edge.add",
                "params": [
                    "name": .string("n-\(i)"), "source": ["collection": "e", "key": "s"],
                    "destination": ["collection": "e", "key": "d"], "rules": [],
                ],
            ])
        }
        _ = try c.call("transact", ["ops": .array(ops)])
        let refused = expectRPCError(Code.application, "reply_too_large") { () throws(ClientError) in
            try c.call("edge.find")
        }
        #expect(refused?.message.contains("edge.find limit and after") == true)
        let ls = try h.assetctl("edge", "ls", "--source", "e", "s")
        #expect(ls.status == 0, "\(ls.stderr)")
        let names = ls.stdout.split(separator: "\n").dropFirst().map { $0.split(separator: " ").first.map(String.init) }
        #expect(names == (0..<30).map { "n-\($0)" }, "\(ls.stdout)")
    }

    @Test("edge ls lists past an edge larger than max_reply_bytes, names it on stderr and exits 1")
    func edgeListPastBigEdge() throws {
        let h = try DaemonHarness(controlSection: #"max_reply_bytes = "1KiB""#)
        let c = try h.client()
        let long = String(repeating: "k", count: 1024)
        for k in ["s", "d", long] { try c.putObject("e", k) }
        try c.addEdge("n-0", from: ref("e", "s"), to: ref("e", "d"), rules: [])
        try c.addEdge("big", from: ref("e", "s"), to: ref("e", long), rules: [])
        try c.addEdge("n-1", from: ref("e", "s"), to: ref("e", "d"), rules: [])
        let ls = try h.assetctl("edge", "ls", "--source", "e", "s")
        #expect(ls.status == 1, "\(ls)")
        #expect(ls.stderr.contains("edge 2 is larger than the reply limit (control.max_reply_bytes): not listed"))
        let names = ls.stdout.split(separator: "\n").dropFirst().map { $0.split(separator: " ").first.map(String.init) }
        #expect(names == ["n-0", "n-1"], "\(ls.stdout)")
    }
}
