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
        lazy var turns = LeasedTurns { [unowned self] then in drains.append(then) }

        func submit(_ name: String, uid: UInt32, drains: Bool = false) {
            turns.submit(uid: uid, drains: drains) { [unowned self] finished in
                started.append(name)
                finish[name] = finished
            }
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
}
