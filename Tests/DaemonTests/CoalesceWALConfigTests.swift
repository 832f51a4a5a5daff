// store.coalesce_wal: a boolean, on unless set, that reaches the store and the start-up summary.

@testable import AssetService
import AssetStore
import Testing

@Suite struct CoalesceWALConfigTests {
    func parse(_ text: String) throws(ConfigError) -> DaemonConfig {
        try ConfigParser(file: "/etc/assetd/test.toml", text: text).parse(defaults: DaemonConfig.embeddedDefaults())
    }

    @Test(
        "store.coalesce_wal is true unless set, reaches the store and the summary; anything but a boolean is an error naming it"
    )
    func coalesceWALKey() throws {
        #expect(try parse("").storeConfiguration().coalesceWAL)
        #expect(try parse("").summary.contains("store.coalesce_wal = true"))
        let off = try parse("[store]\ncoalesce_wal = false")
        #expect(!off.storeConfiguration().coalesceWAL)
        #expect(off.summary.contains("store.coalesce_wal = false"))
        #expect(try parse("[store]\ncoalesce_wal = true").storeConfiguration().coalesceWAL)
        for bad in ["0", "\"false\"", "[]"] {
            do {
                _ = try parse("[store]\ncoalesce_wal = \(bad)")
                Issue.record("\(bad) accepted")
            } catch {
                #expect(error.description.contains("store.coalesce_wal"))
            }
        }
    }
}
