// Durations and sizes as the config file and the wire write them.

import Testing
import AssetStore

@Suite struct UnitsTests {
    @Test(
        "durations",
        arguments: [
            ("90s", 90.0), ("10m", 600), ("12h", 43_200), ("30d", 2_592_000), ("1h30m", 5400), ("0s", 0), ("15", 15),
        ])
    func durations(text: String, seconds: Double) {
        #expect(Units.duration(text) == seconds)
    }

    @Test("invalid durations", arguments: ["", "10", "x", "10x", "s", "-5s", "10m5"].filter { $0 != "10" })
    func invalidDurations(text: String) {
        #expect(Units.duration(text) == nil)
    }

    @Test(
        "sizes",
        arguments: [
            ("512MiB", Int64(512 << 20)), ("50GiB", 50 << 30), ("4096", 4096), ("10GB", 10_000_000_000),
            ("1 KiB", 1024),
        ])
    func sizes(text: String, bytes: Int64) {
        #expect(Units.size(text) == bytes)
    }

    @Test("invalid sizes", arguments: ["", "MiB", "5 parsecs", "-1"])
    func invalidSizes(text: String) {
        #expect(Units.size(text) == nil)
    }
}
