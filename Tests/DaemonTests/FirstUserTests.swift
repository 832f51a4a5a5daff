// What a first-time user trips over with the real assetctl against a real assetd: the forms of
// paths, messages and exit statuses the man pages promise for common mistakes.

import AssetClient
import AssetStore
import Foundation
import Testing

@Suite("assetctl for a first-time user") struct FirstUserTests {
    @Test("a file:// URL given to --file or file reaches the daemon as a URL, not glued to the working folder")
    func fileURL() throws {
        let h = try DaemonHarness()
        let f = try h.makeFile("media/a.mp4", size: 10)
        let put = try h.assetctl("put", "media", "a", "--file", "file://" + f)
        #expect(put.status == 0, "\(put.stderr)")
        let file = try h.assetctl("--json", "file", "file://" + f)
        #expect(file.status == 0, "\(file.stderr)")
        #expect(try JSONValue.parse(file.stdout)["file"]?["path"] == .string(f))
    }
}
