// Access times kept in memory (store.access_flush) through the real daemon: a policy run orders by
// touches not yet written, a SIGKILL inside the window loses only access times, and the
// store.access_flush timer writes them with no other trigger. No sleeps: stats counters.

import AssetClient
import AssetStore
import ControlProtocol
import Foundation
import Testing

@Suite("access times in memory", .serialized)
struct AccessTimeTests {
    /// The `access` figures of `stats`.
    private func access(_ c: ControlClient) throws -> JSONValue {
        try #require(try c.call("stats")["access"])
    }

    @Test("eviction order sees touches not yet written (a dry run and a real run)")
    func evictionSeesPendingTouches() throws {
        let h = try DaemonHarness(
            extraConfig: policyConfig(maxBytes: 1 << 40) + "\norder = \"lru\"\n", storeSection: #"access_flush = "1h""#)
        let c = try h.client()
        var last = 0.0
        for i in 0..<4 {
            try c.putFile("media", "m\(i)", try h.makeFile("m\(i).bin", size: 100))
            last = try #require(c.getObject("media", "m\(i)")["accessed"]?.doubleValue)
            passClock(last)  // each put a later accessed
        }
        // m0 and m1, the oldest, touched: the least recently accessed are now m2, then m3.
        _ = try c.call("object.touch", ref("media", "m0"))
        _ = try c.call("object.get", ["collection": "media", "key": "m1", "touch": true])
        #expect(try access(c)["pending"] == 2, "the touches are in memory, not written")
        #expect(try access(c)["flushes"] == 0)
        #expect((try c.getObject("media", "m0")["accessed"]?.doubleValue ?? 0) > last, "a get shows a pending touch")
        let dry = try c.call("policy.evict", ["bytes": 150, "dry_run": true])
        #expect(dry["objects"]?.refTexts == ["media/m2", "media/m3"], "\(dry.serialized())")
        #expect(try access(c)["pending"] == 0, "a dry run wrote them first")
        #expect(try access(c)["flushes"] == 1)
        _ = try c.call("object.touch", ref("media", "m2"))
        let real = try c.call("policy.evict", ["bytes": 150])
        #expect(real["objects"]?.refTexts == ["media/m3", "media/m0"], "\(real.serialized())")
    }

    @Test("a SIGKILL inside the window loses the access times and nothing else")
    func crashLosesOnlyAccessTimes() throws {
        let h = try DaemonHarness(storeSection: #"access_flush = "1h""#)
        let c = try h.client()
        try c.putObject("t", "touched")
        let before = try #require(c.getObject("t", "touched")["accessed"]?.doubleValue)
        passClock(before)
        _ = try c.call("object.touch", ref("t", "touched"))
        #expect((try c.getObject("t", "touched")["accessed"]?.doubleValue ?? 0) > before)
        try c.putObject("t", "after", ["n": 1])  // acknowledged after the touch
        try c.addEdge("x", from: ref("t", "after"), to: ref("t", "touched"), rules: [])
        #expect(try access(c)["pending"] == 1)
        _ = h.stop(signal: SIGKILL)
        try h.start()
        let c2 = try h.client()
        #expect(try c2.getObject("t", "touched")["accessed"]?.doubleValue == before, "the touch is lost")
        #expect(try c2.getObject("t", "after")["value"] == ["n": 1], "the later put is not")
        #expect(try c2.call("edge.count", ["source": ref("t", "after")]) == ["count": 1], "nor its edge")
    }

    @Test("with access_flush = 100ms the touches reach the database with no other trigger")
    func flushIntervalIsHonoured() throws {
        let h = try DaemonHarness(storeSection: #"access_flush = "100ms""#)
        let c = try h.client()
        let (before, touched) = try putAndTouch(c)
        #expect(touched > before)
        #expect(try eventually { try access(c)["flushes"]?.intValue ?? 0 >= 1 && access(c)["pending"] == 0 })
        #expect(try access(c)["flushed"] == 1)
        _ = h.stop(signal: SIGKILL)  // no shutdown flush: the timer's write alone
        try h.start()
        #expect(try h.client().getObject("t", "k")["accessed"]?.doubleValue == touched)
    }

    @Test("a clean stop writes the pending access times")
    func cleanStopFlushes() throws {
        let h = try DaemonHarness(storeSection: #"access_flush = "1h""#)
        let c = try h.client()
        let (_, touched) = try putAndTouch(c)
        #expect(h.stop() == 0)
        try h.start()
        #expect(try h.client().getObject("t", "k")["accessed"]?.doubleValue == touched)
    }

    /// Puts t/k, lets the clock pass its `accessed`, touches it; its `accessed` before and after.
    func putAndTouch(_ c: ControlClient) throws -> (before: Double, touched: Double) {
        try c.putObject("t", "k")
        let before = try #require(c.getObject("t", "k")["accessed"]?.doubleValue)
        passClock(before)
        _ = try c.call("object.touch", ref("t", "k"))
        return (before, try #require(c.getObject("t", "k")["accessed"]?.doubleValue))
    }
}
