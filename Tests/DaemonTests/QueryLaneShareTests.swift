// A uid that is not an admin runs at most half the query threads (at least one), even alone
// (docs/DESIGN.md): a query may hold its thread until control.query_time_limit,
// and one user looping slow clauses on a few connections held both of the default two, so
// another user's trivial index.query waited up to that limit (27 s at the default 30 s).
// Admins have no cap.

import AssetClient
import JSON
import Foundation
import Testing

@Suite struct QueryLaneShareTests {
    /// Opens `argv[2]` connections, sends on each an index.query with the clause `argv[3]`,
    /// prints "sent", and keeps them open (their queries running or waiting) until stopped.
    static let slowQueries = """
        import json, socket, sys
        conns = []
        for i in range(int(sys.argv[2])):
            s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
            req = {"jsonrpc": "2.0", "id": i, "method": "index.query", "params": {"where": sys.argv[3]}}
            s.sendall((json.dumps(req) + "\\n").encode())
            conns.append(s)
        print("sent", flush=True)
        conns[0].recv(1)
        """

    @Test(
        "one user's slow queries leave another user's query a thread",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as another user"))
    func anotherUserQueries() throws {
        let h = try DaemonHarness(controlSection: "mode = \"0666\"\nquery_threads = 2\nquery_time_limit = \"10m\"")
        let c = try h.client(timeout: 60)
        for i in 0..<40 { try c.putObject("q", "k\(i)", ["n": .int(Int64(i))]) }
        let flood = try BackgroundProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=\(Nobody.uid)", "--regid=\(Nobody.uid)", "--clear-groups", "/usr/bin/python3", "-c",
                Self.slowQueries, h.socket, "3", HostileClientTests.endlessClause,
            ])
        defer { flood.stop() }
        #expect(flood.waitForLine { $0 == "sent" })
        // Nobody alone runs one of the two threads; its other two queries wait.
        let lane = { () throws -> JSONValue? in try c.call("stats")["queries"] }
        #expect(try eventually { try lane() == ["threads": 2, "running": 1, "queued": 2] })
        // Root's query takes the other thread at once (10 minutes otherwise).
        let rows = try c.call("index.query", ["where": "WHERE key = ?", "params": ["k1"]])
        #expect(rows["rows"]?.arrayValue?.count == 1, "\(rows)")
        #expect(try lane()?["running"] == 1)
    }

    /// Starts `count` of `clause` on connections of their own, as `nobody` or (nil) as root.
    private static func flood(_ h: DaemonHarness, _ count: Int, as uid: UInt32?) throws -> BackgroundProcess {
        let python = ["/usr/bin/python3", "-c", slowQueries, h.socket, "\(count)", HostileClientTests.endlessClause]
        guard let uid else { return try BackgroundProcess(python[0], Array(python.dropFirst())) }
        return try BackgroundProcess(
            "/usr/bin/setpriv", ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups"] + python)
    }

    @Test("an admin's queries run on every query thread")
    func adminUncapped() throws {
        let h = try DaemonHarness(controlSection: "mode = \"0666\"\nquery_threads = 2\nquery_time_limit = \"10m\"")
        let c = try h.client(timeout: 60)
        for i in 0..<40 { try c.putObject("q", "k\(i)", ["n": .int(Int64(i))]) }
        let flood = try Self.flood(h, 2, as: nil)  // root: an admin
        defer { flood.stop() }
        #expect(flood.waitForLine { $0 == "sent" })
        let lane = { () throws -> JSONValue? in try c.call("stats")["queries"] }
        #expect(try eventually { try lane() == ["threads": 2, "running": 2, "queued": 0] })
    }

    /// Sends one trivial index.query and prints "rows" and the number of rows it answers.
    static let oneQuery = """
        import json, socket, sys
        s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
        req = {"jsonrpc": "2.0", "id": 1, "method": "index.query", "params": {"where": "WHERE key = 'k1'"}}
        s.sendall((json.dumps(req) + "\\n").encode())
        print("rows", len(json.loads(s.makefile().readline())["result"]["rows"]), flush=True)
        """

    @Test(
        "each user that is not an admin runs half the query threads, and a newcomer's query one at once",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as another user"))
    func newcomersEachTakeOne() throws {
        let h = try DaemonHarness(controlSection: "mode = \"0666\"\nquery_threads = 3\nquery_time_limit = \"10m\"")
        let c = try h.client(timeout: 60)
        for i in 0..<40 { try c.putObject("q", "k\(i)", ["n": .int(Int64(i))]) }
        let lane = { () throws -> JSONValue? in try c.call("stats")["queries"] }
        // Half of three is one, alone too: a query cannot be stopped for a newcomer, and one
        // uid that ran two kept the third user waiting up to the time limit.
        let first = try Self.flood(h, 3, as: Nobody.uid)
        defer { first.stop() }
        #expect(first.waitForLine { $0 == "sent" })
        #expect(try eventually { try lane() == ["threads": 3, "running": 1, "queued": 2] })
        let second = try Self.flood(h, 1, as: Nobody.uid - 1)
        defer { second.stop() }
        #expect(second.waitForLine { $0 == "sent" })
        #expect(try eventually { try lane() == ["threads": 3, "running": 2, "queued": 2] })
        // A third user, not an admin either, is answered at once (10 minutes otherwise).
        let third = try BackgroundProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=\(Nobody.uid - 2)", "--regid=\(Nobody.uid - 2)", "--clear-groups", "/usr/bin/python3", "-c",
                Self.oneQuery, h.socket,
            ])
        defer { third.stop() }
        #expect(third.waitForLine { $0 == "rows 1" })
        #expect(try lane() == ["threads": 3, "running": 2, "queued": 2])
    }
}
