// Room reserved before each append to a long-lived buffer grows it geometrically: a session's
// output collects up to 512 pipelined replies a loop turn, and growing it by exactly what each
// reply asks copied every reply already waiting, once per reply.

import JSON
import Testing

@Suite struct ByteArrayReserveTests {
    @Test("room reserved before each of 512 appends reallocates the buffer a few times, not each time")
    func growsGeometrically() {
        var out = [UInt8]()
        var regrowths = 0
        for _ in 0..<512 {
            let capacity = out.capacity
            out.reserveMore(8192 + 256)
            if out.capacity != capacity { regrowths += 1 }
            out.append(contentsOf: repeatElement(UInt8(ascii: "x"), count: 8192))
        }
        #expect(out.count == 512 * 8192)
        #expect(regrowths <= 16, "\(regrowths) reallocations")
    }
}
