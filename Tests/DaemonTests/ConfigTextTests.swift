// Config text TOMLKit cannot be given (ConfigParser+Text.swift), found by the config fuzzer: a
// table header whose name starts with another character aborted assetd in toml++'s assert,
// and text after a NUL byte was ignored. Both are errors naming the line; brackets and such
// characters inside values and strings are not headers.

import AssetStore
import Foundation
import Testing
@testable import AssetDaemon

@Suite struct ConfigTextTests {
    func parse(_ text: String) throws(ConfigError) -> DaemonConfig {
        let defaults = DaemonConfig.embeddedDefaults(uid: 1000, environment: ["HOME": "/home/u"])
        return try ConfigParser(file: "/etc/assetd/test.toml", text: text).parse(defaults: defaults)
    }

    @Test("a table header not starting with a name is a config error on its line, not an abort", arguments: [
        ("[é]\n", 1), ("[store]\n\n[\u{1F}x]\n", 3), ("[[ \u{FFFD}]]\n", 1), ("# c\n[ ]\n", 2), ("[\u{1}]", 1),
    ])
    func badHeader(_ text: String, _ line: Int) {
        #expect(throws: ConfigError.self) { _ = try parse(text) }
        do { _ = try parse(text) } catch {
            #expect(error.line == line)
            #expect(error.message.contains("table header"), "\(error)")
        }
    }

    @Test("a NUL byte is a config error on its line: what followed it was ignored")
    func nulByte() {
        do {
            _ = try parse("[log]\nlevel = \"info\"\u{0}\n[files]\nroots = [\"/etc\"]\n")
            Issue.record("accepted")
        } catch {
            #expect(error.line == 2)
            #expect(error.message.contains("NUL"))
        }
    }

    @Test("brackets in arrays and strings, and headers with quoted names, are no bad header")
    func notHeaders() throws {
        let text = """
            [control]
            admin_uids = [
              0,
              1000,
            ]
            admin_groups = [ "wheel", '[é' ]
            # [é] in a comment
            ["log"]
            level = "info"
            """
        let c = try parse(text)
        #expect(c.adminUIDs == [0, 1000])
        #expect(ConfigParser.unfitLine("a = \"\"\"\n[é\n\"\"\"\nb = '''\n[\u{1}\n'''\nc = [\n  [1], [],\n  [{x = 1}],\n]\n") == nil)
    }
}
