// A uid's calls counted against its lease quota go to the pool one at a time, in order, each
// once the one before is answered; a lease first waits for the puts queued before it. Other
// uids are not held up. The queue alone, on the test's thread as on the loop.

@testable import AssetDaemon
import Testing

@Suite struct LeasedTurnsTests {
    /// The turns, with the drains asked of them held until `drained` runs them.
    private final class Harness {
        var started: [String] = []
        var finish: [String: () -> Void] = [:]
        var drains: [() -> Void] = []
        var dropped: [String] = []
        var stopping = false
        lazy var turns = LeasedTurns(
            drain: { [unowned self] _, then in drains.append(then) }, stopping: { [unowned self] in stopping })

        func submit(_ name: String, uid: UInt32, connection: UInt64 = 0, drains: Bool = false) {
            turns.submit(
                uid: uid, connection: connection, drains: drains,
                { [unowned self] finished in
                    started.append(name)
                    finish[name] = finished
                },
                drop: { [unowned self] in dropped.append(name) })
        }
    }

    @Test("one call of a uid at a time, in order; another uid's beside it")
    func oneAtATime() {
        let h = Harness()
        h.submit("a1", uid: 1)
        h.submit("a2", uid: 1)
        h.submit("b1", uid: 2)
        #expect(h.started == ["a1", "b1"])
        #expect(h.turns.has(1) && h.turns.has(2) && !h.turns.has(3))
        h.finish["a1"]!()
        #expect(h.started == ["a1", "b1", "a2"])
        h.finish["b1"]!()
        #expect(!h.turns.has(2) && h.turns.has(1))
        h.finish["a2"]!()
        #expect(!h.turns.has(1))
        h.submit("a3", uid: 1)
        #expect(h.started.last == "a3")
    }

    @Test("a lease waits for the puts queued before it, its uid's writes behind it")
    func leaseDrains() throws {
        let h = Harness()
        h.submit("lease", uid: 1, drains: true)
        #expect(h.started.isEmpty && h.drains.count == 1 && h.turns.has(1))
        h.submit("put", uid: 1)
        h.submit("other", uid: 2)
        #expect(h.started == ["other"])
        try #require(h.drains.count == 1)
        h.drains.removeFirst()()
        #expect(h.started == ["other", "lease"])
        try #require(h.finish["lease"] != nil)
        h.finish["lease"]!()
        #expect(h.started == ["other", "lease", "put"])
    }

    @Test("a lease waits for its uid's writes on the pool uncounted; its writes wait behind it")
    func leaseWaitsForWrites() throws {
        let h = Harness()
        h.turns.writeStarted(1)  // an edge.add of uid 1, before it held a lease
        h.turns.writeStarted(2)
        h.submit("lease", uid: 1, drains: true)
        try #require(h.drains.count == 1)
        h.drains.removeFirst()()
        #expect(h.started.isEmpty && h.turns.has(1))
        h.turns.writeEnded(2)  // another uid's: not waited for
        #expect(h.started.isEmpty)
        h.turns.writeEnded(1)
        #expect(h.started == ["lease"])
        // Once none runs, a lease does not wait.
        h.finish["lease"]!()
        h.submit("lease2", uid: 1, drains: true)
        h.drains.removeFirst()()
        #expect(h.started == ["lease", "lease2"])
    }

    @Test("a closed connection's calls not started are dropped; a stop drops those left")
    func dropped() {
        let h = Harness()
        h.submit("a1", uid: 1, connection: 1)
        h.submit("a2", uid: 1, connection: 2)
        h.submit("a3", uid: 1, connection: 2)
        h.submit("a4", uid: 1, connection: 3)
        h.submit("a5", uid: 1, connection: 4)
        h.turns.drop(connection: 2)
        h.turns.drop(connection: 1)  // started: it runs on
        #expect(h.dropped == ["a2", "a3"] && h.started == ["a1"])
        h.finish["a1"]!()
        #expect(h.started == ["a1", "a4"])
        h.stopping = true
        h.finish["a4"]!()
        #expect(h.dropped == ["a2", "a3", "a5"] && h.started == ["a1", "a4"] && !h.turns.has(1))
    }
}
