// Config text TOMLKit cannot be given (ConfigParser+Text.swift), found by the config fuzzer: a
// table header whose name starts with another character, a control character, a date's T
// without a time or a } where an array's value belongs aborted assetd in toml++'s asserts,
// and text after a NUL byte was ignored.
// Each is an error naming the line; brackets inside values and strings are not headers.

import AssetStore
import Foundation
import Testing
@testable import AssetDaemon
@testable import AssetService

@Suite struct ConfigTextTests {
    func parse(_ text: String) throws(ConfigError) -> DaemonConfig {
        let defaults = DaemonConfig.embeddedDefaults(uid: 1000, environment: ["HOME": "/home/u"])
        return try ConfigParser(file: "/etc/assetd/test.toml", text: text).parse(defaults: defaults)
    }

    @Test(
        "a table header not starting with a name is a config error on its line, not an abort",
        arguments: [
            ("[é]\n", 1), ("[store]\n\n[+x]\n", 3), ("[[ \u{FFFD}]]\n", 1), ("# c\n[ ]\n", 2), ("[.a]", 1),
            ("\u{FEFF}[[\u{FFFD}[[ii", 1),
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

    @Test(
        "a control character, in a string or a comment too, is a config error on its line",
        arguments: [
            ("[log]\nlevel = \"a\u{1}\"\n", 2), ("# \u{1F}\n", 1), ("[store]\n\u{7F}", 2), ("x = '''\n\n\u{8}'''", 3),
        ])
    func controlCharacter(_ text: String, _ line: Int) {
        do {
            _ = try parse(text)
            Issue.record("accepted")
        } catch {
            #expect(error.line == line)
            #expect(error.message.contains("control character"), "\(error)")
        }
    }

    @Test(
        "a date whose T has no time after it is a config error, not an abort (found by the fuzzer)",
        arguments: [
            "[log]\nlevel = 1979-05-27Tz7:32:00Z\n", "x = [1979-05-27t:7:32]\n", "x = {y = 1979-05-27T+7:32}\n",
            "b = 1979-05-27 0\n", "b = [1979-05-27 0]\n", "b = 1979-05-27 0,\n",
        ])
    func dateWithoutTime(_ text: String) {
        do {
            _ = try parse(text)
            Issue.record("accepted")
        } catch {
            #expect(error.message.contains("time of day"), "\(error)")
        }
        #expect(
            ConfigParser.unfitLine(
                "x = 1979-05-27T07:32:00Z\ny = 1979-05-27 07:32:00\nz = 1979-05-27\nw = 1979-05-27 # c\n") == nil)
    }

    @Test(
        "a } where an array's value belongs is a config error, not an abort (found by the fuzzer)",
        arguments: [
            "a = [1, }]\n", "a = [}]\n", "a = [ # c\n }]\n", "a = [[}]]\n",
            "[[indexes]]\nmns = [{name= \"duratiod\"}, }, {na = \"d\"}]\n",
        ])
    func braceInArray(_ text: String) {
        do {
            _ = try parse(text)
            Issue.record("accepted")
        } catch {
            #expect(error.message.contains("where a value belongs"), "\(error)")
        }
        #expect(ConfigParser.unfitLine("a = [{b = 1}, {c = [2, 3]}]\nd = [1, 2, ]\ne = {f = [], g = {}}\n") == nil)
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
        #expect(
            ConfigParser.unfitLine("a = \"\"\"\n[é\n\"\"\"\nb = '''\n[ü\n'''\nc = [\n  [1], [],\n  [{x = 1}],\n]\n")
                == nil)
    }
}
