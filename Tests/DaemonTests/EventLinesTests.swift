// What a broadcast's events hold while a watcher lags (docs/PROTOCOL.md, Limits): only what
// events are made from, and weighed for it as well as for their lines, so the 16 MiB and total
// bounds count the bytes really held.

@testable import AssetDaemon
@testable import AssetStore
import Testing

@Suite struct EventLinesTests {
    @Test("a commit's events do not hold the objects it touched, which make no event")
    func touchedNotHeld() {
        let key = String(repeating: "k", count: 1000)
        var touched = (0..<1000).map { ObjectRef("c", key + String($0)) }
        var report = CommitReport()
        report.commit = 1
        report.put = [ObjectRef("c", "p")]
        report.touched = touched
        let lines = EventLines(.commit(report))
        report = CommitReport()
        // Shared with the events, the array is copied when written to; held by none, it is not.
        let before = touched.withUnsafeBufferPointer { $0.baseAddress }
        touched[0] = ObjectRef("c", "x")
        let after = touched.withUnsafeBufferPointer { $0.baseAddress }
        #expect(before == after, "the touched objects are held by the events")
        #expect(lines.count == 1)
    }

    @Test("the weight counts what the events are made from as well as their lines")
    func weightCountsTheSource() {
        let key = String(repeating: "k", count: 1000)
        var report = CommitReport()
        report.commit = 1
        report.put = (0..<100).map { ObjectRef("c", key + String($0)) }
        let lines = EventLines(.commit(report))
        report = CommitReport()
        var rendered = 0
        for i in 0..<lines.count { rendered += lines.line(i).count }
        // Each put's key is held in its ObjectRef and again in its rendered line.
        #expect(lines.weight >= rendered + 100 * key.utf8.count, "weight \(lines.weight), lines \(rendered)")
    }
}
