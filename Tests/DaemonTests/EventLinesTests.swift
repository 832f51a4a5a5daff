// What a broadcast's events hold while a watcher lags (docs/PROTOCOL.md, Limits): only what
// events are made from, and weighed for it as well as for their lines, so the 16 MiB and total
// bounds count the bytes really held.

@testable import AssetDaemon
import AssetService
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

    @Test("whether a filter takes any of a broadcast's events is told exactly, short or long", arguments: [3, 40])
    func takesAnyIsExact(puts: Int) {
        var report = CommitReport()
        report.commit = 1
        report.put = (0..<puts).map { ObjectRef($0 % 2 == 0 ? "a" : "b", "k" + String($0)) }
        report.deleted = [DeletedObject(ref: ObjectRef("d", "gone"), cause: .request)]
        report.filesQueued = ["/f"]
        let lines = EventLines(.commit(report))
        let typeSets: [Set<String>?] = [nil, ["object.put"], ["object.deleted"], ["file.queued"], ["edge.deleted"]]
        let collectionSets: [Set<UTF8Key>?] = [nil, [UTF8Key("a")], [UTF8Key("d")], [UTF8Key("z")]]
        for types in typeSets {
            for collections in collectionSets {
                let filter = EventFilter(collections: collections, types: types)
                let any = (0..<lines.count).contains { lines.matches($0, filter) }
                #expect(lines.takesAny(filter) == any, "\(types ?? []) \(collections?.map(\.string) ?? [])")
            }
        }
        // A type it has, of a collection it has, but not together: none taken.
        #expect(!lines.takesAny(EventFilter(collections: [UTF8Key("d")], types: ["object.put"])))
        #expect(lines.takesAny(EventFilter(collections: [UTF8Key("z")], types: ["file.queued"])))
    }
}
