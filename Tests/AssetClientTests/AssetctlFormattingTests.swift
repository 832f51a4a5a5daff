// The pure parts of the CLI (AssetctlText) and client (AssetClient): PARAM parsing, `--file`
// merging, paths, the default socket, the JSON pretty printer, tables and listings.

import Testing
import AssetClient
import AssetctlText
import JSON

@Suite struct CLIParamsTests {
    @Test(
        "a PARAM is JSON when it parses and a string otherwise",
        arguments: [
            ("42", JSONValue.int(42)), ("-5", .int(-5)), ("1.5", .double(1.5)), ("true", .bool(true)),
            ("null", .null), ("\"42\"", .string("42")), ("alice", .string("alice")),
            ("[1,\"a\"]", .array([1, "a"])), ("{\"a\":1}", .object(["a": 1])), ("", .string("")),
            ("{broken", .string("{broken")), ("42 apples", .string("42 apples")),
        ])
    func param(text: String, expected: JSONValue) throws {
        #expect(try CLIParams.parseParam(text) == expected)
    }

    @Test(
        "a PARAM holding a number assetd cannot keep exactly is refused, not sent as null",
        arguments: [
            "1e400", "-1e400", "18446744073709551617", "[1,1e400]",
        ])
    func inexactParam(text: String) {
        #expect(throws: CLIParamError.self) { try CLIParams.parseParam(text) }
    }

    @Test(
        "--file adds to the value's file field, an array once there are two",
        arguments: [
            (JSONValue.object([:]), ["/a"], JSONValue.object(["file": "/a"])),
            (.object([:]), ["/a", "/b"], .object(["file": ["/a", "/b"]])),
            (.object(["file": "/x", "n": 1]), ["/a"], .object(["file": ["/x", "/a"], "n": 1])),
            (.object(["file": ["/x"]]), ["/a"], .object(["file": ["/x", "/a"]])),
            (.object(["file": .null]), ["/a"], .object(["file": "/a"])),
            (.array([1]), [], .array([1])),
        ])
    func addFiles(value: JSONValue, files: [String], expected: JSONValue) throws {
        #expect(try CLIParams.addFiles(files, to: value) == expected)
    }

    @Test(
        "--file on a value that is not an object, or whose file field is not paths, is refused",
        arguments: [JSONValue.array([1]), .string("x"), .object(["file": 7])])
    func addFilesRefused(value: JSONValue) {
        #expect(throws: CLIParamError.self) { try CLIParams.addFiles(["/a"], to: value) }
    }

    @Test("bad JSON names the argument")
    func badJSON() {
        #expect(throws: CLIParamError.self) { try CLIParams.parseJSON("{", what: "VALUE_JSON") }
        do {
            _ = try CLIParams.parseJSON("{", what: "--meta")
        } catch {
            #expect(error.message.hasPrefix("--meta is not valid JSON"))
            #expect(!error.message.contains("needs quotes"), "no hint for what is not a bare word")
        }
        do {
            _ = try CLIParams.parseJSON("hello", what: "VALUE_JSON")
        } catch {
            #expect(error.message.hasSuffix(#"; a JSON string needs quotes: '"hello"'"#), "\(error.message)")
        }
    }

    @Test("rule lists split on commas, repeated options add up")
    func rules() {
        #expect(CLIParams.ruleNames(["a,b", " c ", ",,", "d"]) == ["a", "b", "c", "d"])
        #expect(CLIParams.ruleNames([]) == [])
    }

    @Test(
        "relative paths are made absolute against the working folder",
        arguments: [
            ("f.jpg", "/home/u", "/home/u/f.jpg"), ("./f.jpg", "/home/u/", "/home/u/f.jpg"),
            ("/abs/f", "/home/u", "/abs/f"), (".", "/w", "/w"), ("a/../b", "/w", "/w/a/../b"),
            ("file:///abs/f", "/w", "file:///abs/f"), ("file:/f", "/w", "/w/file:/f"),
        ])
    func absolute(path: String, cwd: String, expected: String) {
        #expect(CLIParams.absolutePath(path, cwd: cwd) == expected)
    }

    @Test("a ref is {collection, key}")
    func ref() {
        #expect(CLIParams.ref("c", "k") == .object(["collection": "c", "key": "k"]))
    }

    @Test("assetctl refuses a JSON argument holding a number assetd cannot keep, naming where")
    func cliArgument() throws {
        let e = CLIParamError(
            "VALUE_JSON holds 1e400 at [1], a number assetd cannot keep exactly; write it as a string")
        #expect(throws: e) { try CLIParams.parseJSON("[5,1e400]", what: "VALUE_JSON") }
        #expect(throws: CLIParamError.self) { try CLIParams.parseJSON("18446744073709551617", what: "--meta") }
        #expect(try CLIParams.parseJSON(#"{"n":1e2}"#, what: "VALUE_JSON") == ["n": 100.0])
    }
}

@Suite struct SocketLocationTests {
    @Test("root uses /run/assetd whatever the environment says")
    func root() {
        #expect(
            SocketLocation.defaultPath(environment: ["XDG_RUNTIME_DIR": "/run/user/0"], isRoot: true, home: "/root")
                == "/run/assetd/control.sock")
    }

    @Test(
        "a user's socket is in the runtime folder, else the state folder",
        arguments: [
            (["XDG_RUNTIME_DIR": "/run/user/1000"], "/run/user/1000/assetd.sock"),
            (["XDG_RUNTIME_DIR": "", "XDG_STATE_HOME": "/s/"], "/s/assetd/control.sock"),
            (["HOME": "/home/u"], "/home/u/.local/state/assetd/control.sock"),
            ([:], "/pw/.local/state/assetd/control.sock"),
        ])
    func user(environment: [String: String], expected: String) {
        #expect(SocketLocation.defaultPath(environment: environment, isRoot: false, home: "/pw") == expected)
    }

    @Test("--socket beats $ASSETD_SOCKET, which beats the default")
    func precedence() {
        let env = ["ASSETD_SOCKET": "/e.sock", "XDG_RUNTIME_DIR": "/r"]
        #expect(SocketLocation.resolve(explicit: "/x.sock", environment: env, isRoot: false, home: nil) == "/x.sock")
        #expect(SocketLocation.resolve(explicit: nil, environment: env, isRoot: false, home: nil) == "/e.sock")
        #expect(
            SocketLocation.resolve(explicit: nil, environment: ["XDG_RUNTIME_DIR": "/r"], isRoot: false, home: nil)
                == "/r/assetd.sock")
    }
}

@Suite struct FormattingTests {
    @Test("pretty prints with two spaces, sorted keys, empty containers on one line")
    func pretty() {
        let v: JSONValue = ["b": [1, ["x": .null]], "a": "s\"q", "e": [:], "f": [], "d": 1.5]
        #expect(
            Formatting.pretty(v) == """
                {
                  "a": "s\\"q",
                  "b": [
                    1,
                    {
                      "x": null
                    }
                  ],
                  "d": 1.5,
                  "e": {},
                  "f": []
                }

                """)
        #expect(Formatting.pretty(42) == "42\n")
        #expect(Formatting.pretty([:]) == "{}\n")
    }

    @Test("pretty output parses back to the same value")
    func prettyRoundTrip() throws {
        let v: JSONValue = ["k": ["nested": [true, false, .null, -3, "é\n\t"]], "z": [[], [:]]]
        #expect(try JSONValue.parse(Formatting.pretty(v)) == v)
    }

    @Test(
        "cells",
        arguments: [
            (JSONValue.null, "-"), (.bool(true), "true"), (.int(-7), "-7"), (.double(3.0), "3"), (.double(2.5), "2.5"),
            (.string("a\nb"), "a\\nb"), (.array([]), "-"), (.array(["a", "b"]), "a,b"),
            (.object(["collection": "c", "key": "k"]), "c/k"), (.object(["file": "/p"]), "/p"),
            (.object(["x": 1]), "{\"x\":1}"), (.array([["x": 1]]), "[{\"x\":1}]"),
        ])
    func cells(value: JSONValue, expected: String) {
        #expect(Formatting.cell(value) == expected)
    }

    @Test("timestamps are UTC ISO 8601")
    func timestamps() {
        #expect(Formatting.timestamp(0) == "1970-01-01T00:00:00Z")
        #expect(Formatting.timestamp(1_732_170_000.9) == "2024-11-21T06:20:00Z")
    }

    @Test("tables align columns, right-align numbers and leave no trailing spaces")
    func table() {
        let out = Formatting.table(
            header: ["PATH", "ATTEMPTS", "LAST_ERROR"],
            rows: [["/a/long/path", "2", "EACCES"], ["/b", "10", "-"], ["/c", "-", ""]])
        #expect(
            out == """
                PATH          ATTEMPTS  LAST_ERROR
                /a/long/path         2  EACCES
                /b                  10  -
                /c                   -

                """)
        #expect(!out.split(separator: "\n").contains { $0.hasSuffix(" ") })
    }

    @Test("a table of no rows is nothing, and a column of only - is not numeric")
    func emptyTable() {
        #expect(Formatting.table(header: ["A", "B"], rows: []) == "")
        #expect(
            Formatting.table(header: ["NAME", "VERSION", "X"], rows: [["default", "-", "y"]])
                == "NAME     VERSION  X\ndefault  -        y\n")
    }

    @Test("object tables put the leading columns first, then the rest sorted")
    func objectTable() {
        let rows: [JSONValue] = [
            ["key": "a", "collection": "m", "size": 10, "zeta": true],
            ["key": "bb", "collection": "m", "alpha": "x"],
        ]
        let columns = Formatting.columns(of: rows)
        #expect(columns == ["collection", "key", "alpha", "size", "zeta"])
        #expect(
            Formatting.objectTable(rows, columns: columns) == """
                collection  key  alpha  size  zeta
                m           a    -        10  true
                m           bb   x         -  -

                """)
    }

    @Test("edge tables show ends as collection/key or the path")
    func edges() {
        let edge: JSONValue = [
            "name": "file", "source": ["collection": "media", "key": "a"], "destination": ["file": "/c/a.jpg"],
            "rules": ["deleteDestinationIfAllSourcesDeleted"], "kind": "derived", "field": "file",
        ]
        #expect(
            Formatting.edgeTable([edge]) == """
                NAME  SOURCE   DESTINATION  RULES                                 KIND
                file  media/a  /c/a.jpg     deleteDestinationIfAllSourcesDeleted  derived

                """)
    }

    @Test("listings flatten nested objects with dotted names")
    func listing() {
        let stats: JSONValue = ["objects": 3, "bytes_per_owner": ["alice": 10, "bob": 2], "uptime": 1.5, "none": [:]]
        #expect(
            Formatting.listing(stats) == """
                bytes_per_owner.alice  10
                bytes_per_owner.bob    2
                none                   {}
                objects                3
                uptime                 1.5

                """)
        #expect(Formatting.listing(7) == "7\n")
    }

    @Test("stats lists each owner of owners apart, even those the map by name leaves out")
    func statsListing() {
        let (bob, eve) = ("caf\u{e9}", "cafe\u{301}")
        let stats: JSONValue = [
            "bytes": 405, "bytes_per_owner": ["alice": 5], "objects": 3,
            "owners": [
                ["owner": "alice", "bytes": 5], ["owner": .string(eve), "bytes": 100],
                ["owner": .string(bob), "bytes": 300],
            ],
        ]
        // Both look-alike names are 20 Characters wide, "bytes_per_owner.alice" 21.
        let expected = [
            "bytes                  405", "bytes_per_owner.alice  5", "bytes_per_owner.\(eve)   100",
            "bytes_per_owner.\(bob)   300", "objects                3",
        ].map { $0 + "\n" }.joined()
        #expect(Array(Formatting.statsListing(stats).utf8) == Array(expected.utf8))
        // No owners: the map as it is, and no line for the empty list.
        #expect(
            Formatting.statsListing(["bytes_per_owner": [:], "owners": [], "objects": 0])
                == "bytes_per_owner  {}\nobjects          0\n")
    }

    @Test("stats of a daemon without owners lists as it did before owners")
    func statsListingWithoutOwners() {
        let stats: JSONValue = [
            "bytes": 12, "bytes_per_owner": ["alice": 10, "bob": 2], "objects": 3, "wal": ["frames": 4],
        ]
        let old = """
            bytes                  12
            bytes_per_owner.alice  10
            bytes_per_owner.bob    2
            objects                3
            wal.frames             4

            """
        #expect(Formatting.listing(stats) == old)
        #expect(Formatting.statsListing(stats) == old)
    }

    @Test("an event is its type, then name=value pairs in name order")
    func event() {
        let e: JSONValue = [
            "type": "object.deleted", "commit": 42, "collection": "m", "key": "a b", "cause": "cascade",
        ]
        #expect(Formatting.eventLine(e) == "object.deleted cause=cascade collection=m commit=42 key=\"a b\"")
    }
}
