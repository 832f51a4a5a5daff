// What a parsed value is counted as holding grows as its memory does: numbers by their
// slots, strings by their bytes, objects by their entries.

import Testing

@testable import JSON

@Suite struct JSONHeldTests {
    @Test("an array of numbers holds about twelve times its text; a string about its text")
    func heldBytesFollowMemory() throws {
        let zeros = "[" + Array(repeating: "0", count: 100_000).joined(separator: ",") + "]"
        let numbers = try JSONValue.parse(zeros)
        #expect(numbers.heldBytes >= 10 * zeros.utf8.count, "\(numbers.heldBytes)")
        let text = "\"" + String(repeating: "x", count: 200_000) + "\""
        let string = try JSONValue.parse(text)
        #expect(string.heldBytes >= 200_000 && string.heldBytes < 2 * 200_000, "\(string.heldBytes)")
        #expect(JSONValue.string("short").heldBytes == 0, "kept inline")
        #expect(JSONValue.int(1).heldBytes == 0 && JSONValue.array([]).heldBytes == 0)
        let object = try JSONValue.parse(#"{"a":[1,2],"a long name, kept out of line":{"b":"c"}}"#)
        let parts = JSONValue.array([1, 2]).heldBytes + JSONValue.object(["b": "c"]).heldBytes
        #expect(object.heldBytes > parts + 40, "its entries and its long key count too")
    }
}
