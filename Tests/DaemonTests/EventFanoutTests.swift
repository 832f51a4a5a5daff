// A commit's events go to every watcher (assetd(8), CONTROL PROTOCOL, Events), and each is
// rendered once for all of them: rendered per watcher, 255 watchers and a transact of 14,000
// puts held the loop for seconds. Debug builds count the lines rendered
// (`stats.debug.event_lines_rendered`, shown while ASSETD_DEBUG_STATS is set).

import AssetClient
import ControlProtocol
import Foundation
import JSON
import Testing

#if DEBUG
@Suite struct EventFanoutTests {
    static func puts(_ collection: String, _ count: Int) -> [JSONValue] {
        (0..<count).map { i in
            [
                "method": "object.put",
                "params": ["collection": .string(collection), "key": .string("k\(i)"), "value": [:]],
            ]
        }
    }

    @Test("a commit's events are rendered once for all watchers, and only those a watcher takes")
    func renderedOnce() throws {
        let h = try DaemonHarness(start: false)
        h.environment = ["ASSETD_DEBUG_STATS": "1"]
        try h.start()
        let watchers = try (0..<16).map { _ in try h.client() }
        for w in watchers { try w.call("watch", ["collections": ["fan"]]) }
        let c = try h.client()
        // One commit: 500 events some watcher takes, 500 none does.
        try c.call("transact", ["ops": .array(Self.puts("fan", 500) + Self.puts("elsewhere", 500))])
        for w in watchers {
            var keys: [String] = []
            while keys.count < 500, let e = try w.nextEvent() { keys.append(e["key"]?.stringValue ?? "?") }
            #expect(keys == (0..<500).map { "k\($0)" })
        }
        let rendered = try c.call("stats")["debug"]?["event_lines_rendered"]
        #expect(rendered == 500, "16 watchers, 500 events each: rendered \(rendered?.serialized() ?? "nil")")
    }
}
#endif
