// A watch's collections are told apart by their bytes, as the store keys collections: under
// String's equality a watch on `café` got the events of `cafe` + U+0301 (another collection),
// and a watch naming both kept one of them.

@testable import AssetDaemon
import AssetService
import AssetStore
import Testing

@Suite struct EventFilterBytesTests {
    private let composed = "caf\u{e9}"
    private let decomposed = "cafe\u{301}"

    private func event(_ collections: [String]) -> ServerEvent {
        ServerEvent(type: "object.put", collections: collections, params: [:])
    }

    @Test("a watch on a collection gets nothing of one whose name is only canonically equivalent")
    func lookalikeCollections() {
        let one = EventFilter(collections: [UTF8Key(composed)])
        #expect(event([composed]).matches(one))
        #expect(!event([decomposed]).matches(one))
        // An edge between the two concerns both.
        #expect(event([decomposed, composed]).matches(one))
        #expect(event([composed, decomposed]).matches(EventFilter(collections: [UTF8Key(decomposed)])))
        // A watch naming both keeps both.
        let both = EventFilter(collections: Set([composed, decomposed].map { UTF8Key($0) }))
        #expect(both.collections?.count == 2)
        #expect(event([decomposed]).matches(both) && event([composed]).matches(both))
    }
}
