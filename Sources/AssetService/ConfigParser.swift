// Reads assetd.toml strictly: unknown keys and wrong types are errors that name the file, line and
// key (assetd.toml(5), DESCRIPTION). TOML becomes a JSONValue tree first, so templates and indexes
// are validated by the engine's own parsers.

import AssetStore
import Foundation
import TOMLKit

struct ConfigParser {
    let file: String
    let text: String
    /// Refused `[policy]` values are left out and kept in `policyRefusal` instead of thrown:
    /// for `assetctl --db`, whose commands other than enforce run no policy.
    var deferPolicyRefusals = false

    static let sections: [String: Set<String>] = [
        "store": ["path", "durability", "reserve", "coalesce_wal", "access_flush"],
        "control": limitKeys.union([
            "socket", "mode", "admin_uids", "admin_groups", "enforce_ownership", "subuid_file", "max_request_bytes",
            "max_connections",
        ]),
        "files": ["roots", "unlink_delay", "orphan_grace", "skip_open"],
        "log": ["level"],
    ]

    func error(_ key: String?, _ message: String, section: String? = nil, occurrence: Int = 0) -> ConfigError {
        ConfigError(
            file: file, line: line(of: key, section: section, occurrence: occurrence), key: key, message: message)
    }

    func parse(defaults: DaemonConfig) throws(ConfigError) -> DaemonConfig {
        let table: TOMLTable
        if let unfit = ConfigParser.unfitLine(text) {
            throw ConfigError(file: file, line: unfit.line, key: nil, message: unfit.message)
        }
        do {
            table = try TOMLTable(string: text)
        } catch let e as TOMLParseError {
            throw ConfigError(file: file, line: e.source.begin.line, key: nil, message: e.description)
        } catch {
            throw ConfigError(file: file, line: nil, key: nil, message: "\(error)")
        }
        let root = ConfigParser.json(table)
        var c = defaults
        c.sourcePath = file
        for (name, value) in root.objectValue ?? [:] {
            switch name {
            case "collections": try collections(value, into: &c)
            case "indexes": try indexes(value, into: &c)
            case "policy":
                var refused = [ConfigError]()
                let p = try policy(value, refused: &refused)
                c.policy = p
                c.policyRefusal = refused.first
                c.policyWarnings = policyWarnings(value, p)
                c.minFreeLine = line(of: "policy.min_free", section: "policy")
            default:
                guard let allowed = ConfigParser.sections[name] else { throw error(name, "unknown key") }
                guard let members = value.objectValue else { throw error(name, "must be a table") }
                for key in members.keys.sorted() where !allowed.contains(key) {
                    throw error("\(name).\(key)", "unknown key", section: name)
                }
            }
        }
        let get = { (s: String, k: String) in root[s]?[k] }
        if let v = get("store", "path") { c.storePath = try absolute(v, "store.path") }
        if let v = get("store", "durability") {
            guard let d = v.stringValue.flatMap(StoreConfiguration.Durability.init(rawValue:)) else {
                throw error("store.durability", "must be \"full\" or \"normal\"", section: "store")
            }
            c.durability = d
        }
        if let v = get("store", "reserve") { c.reserve = try size(v, "store.reserve", section: "store") }
        if let v = get("store", "coalesce_wal") {
            guard case .bool(let b) = v else {
                throw error("store.coalesce_wal", "must be true or false", section: "store")
            }
            c.coalesceWAL = b
        }
        if let v = get("store", "access_flush") {
            let d = try duration(v, "store.access_flush", section: "store")
            guard d >= 0.001, d <= 3600 else {
                throw error("store.access_flush", "must be from 1ms to 1h", section: "store")
            }
            c.accessFlush = d
        }
        if let v = get("control", "socket") {
            c.socketPath = try absolute(v, "control.socket")
            // sun_path holds 108 bytes with the NUL: found here, not at bind after the store opened.
            guard c.socketPath.utf8.count <= 107 else {
                throw error("control.socket", "must fit in a socket address (at most 107 bytes)", section: "control")
            }
        }
        if let v = get("control", "mode") {
            guard let s = v.stringValue, let m = UInt32(s, radix: 8), m <= 0o777 else {
                throw error("control.mode", "must be an octal mode string such as \"0660\"", section: "control")
            }
            c.socketMode = m
        }
        if let v = get("control", "admin_uids") {
            guard let items = v.arrayValue, let uids = Optional(items.compactMap { $0.intValue }),
                uids.count == items.count,
                uids.allSatisfy({ $0 >= 0 && $0 <= Int64(UInt32.max) })
            else { throw error("control.admin_uids", "must be an array of uids", section: "control") }
            c.adminUIDs = uids.map { UInt32($0) }
        }
        if let v = get("control", "admin_groups") {
            guard let items = v.arrayValue else {
                throw error("control.admin_groups", "must be an array of group names or gids", section: "control")
            }
            c.adminGroups = try items.map { item throws(ConfigError) in
                if let s = item.stringValue { return .name(s) }
                if let i = item.intValue, i >= 0, i <= Int64(UInt32.max) { return .gid(UInt32(i)) }
                throw error("control.admin_groups", "must be an array of group names or gids", section: "control")
            }
        }
        if let v = get("control", "enforce_ownership") {
            guard case .bool(let b) = v else {
                throw error("control.enforce_ownership", "must be true or false", section: "control")
            }
            c.enforceOwnership = b
        }
        if let v = get("control", "subuid_file") {
            c.subuidFile = v.stringValue == "" ? "" : try absolute(v, "control.subuid_file")
        }
        if let v = get("control", "max_request_bytes") {
            guard let n = v.intValue ?? v.stringValue.flatMap(Units.size), n >= 64, n <= 1 << 30 else {
                throw error("control.max_request_bytes", "must be a size from 64 bytes to 1GiB", section: "control")
            }
            c.maxRequestBytes = Int(n)
        }
        if let v = get("control", "max_connections") {
            guard let n = v.intValue, n >= 1, n <= 1_000_000 else {
                throw error("control.max_connections", "must be a positive integer", section: "control")
            }
            c.maxConnections = Int(n)
        }
        try limits(root["control"], maxConnections: c.maxConnections, into: &c.limits)
        if let v = get("files", "roots") {
            guard let items = v.arrayValue, !items.isEmpty else {
                throw error("files.roots", "must be a non-empty array of absolute paths", section: "files")
            }
            c.roots = try items.map { item throws(ConfigError) in try absolute(item, "files.roots") }
            c.rootsOrigin = .configured(line: line(of: "files.roots", section: "files"))
            let roots: ManagedRoots
            do { roots = try ManagedRoots(c.roots) } catch {
                // Name the root: with several, the engine's message alone does not say which.
                let bad =
                    c.roots.first { (try? ManagedRoots.normalise($0)) == nil } ?? error.detail?.stringValue
                    ?? "\(c.roots)"
                throw self.error("files.roots", "root \(bad): \(error.message)", section: "files")
            }
            if let conflict = roots.symlinkConflict() { throw error("files.roots", conflict, section: "files") }
        }
        if let v = get("files", "unlink_delay") {
            c.unlinkDelay = try duration(v, "files.unlink_delay", section: "files")
        }
        if let v = get("files", "orphan_grace") {
            c.orphanGrace = try duration(v, "files.orphan_grace", section: "files")
        }
        if let v = get("files", "skip_open") {
            guard case .bool(let b) = v else {
                throw error("files.skip_open", "must be true or false", section: "files")
            }
            c.skipOpenFiles = b
        }
        if let v = get("log", "level") {
            guard let l = v.stringValue.flatMap(LogLevel.init(rawValue:)) else {
                throw error(
                    "log.level", "must be one of trace, debug, info, notice, warning, error, critical", section: "log")
            }
            c.logLevel = l
        }
        return c
    }

    private func absolute(_ v: JSONValue, _ key: String) throws(ConfigError) -> String {
        let section = String(key.split(separator: ".")[0])
        guard let s = v.stringValue, s.hasPrefix("/") else {
            throw error(key, "must be an absolute path", section: section)
        }
        return s
    }

    func duration(_ v: JSONValue, _ key: String, section: String, occurrence: Int = 0) throws(ConfigError) -> Double {
        guard let d = v.stringValue.flatMap(Units.duration) ?? v.intValue.map(Double.init), d >= 0, d.isFinite else {
            throw error(
                key, "must be a duration such as \"90s\", \"10m\", \"12h\" or \"30d\"", section: section,
                occurrence: occurrence)
        }
        return d
    }

    private func collections(_ value: JSONValue, into c: inout DaemonConfig) throws(ConfigError) {
        guard let items = value.arrayValue else {
            throw error("collections", "must be an array of tables ([[collections]])")
        }
        for (n, item) in items.enumerated() {
            guard let o = item.objectValue, let name = o["name"]?.stringValue else {
                throw error(
                    "collections.name", "each [[collections]] needs a name", section: "collections", occurrence: n)
            }
            for key in o.keys.sorted() where key != "name" && key != "edges" {
                throw error("collections.\(key)", "unknown key", section: "collections", occurrence: n)
            }
            var edges = [EdgeTemplate]()
            for e in o["edges"]?.arrayValue ?? [] {
                for key in (e.objectValue ?? [:]).keys.sorted() where !["name", "field", "to", "rules"].contains(key) {
                    throw error("collections.edges.\(key)", "unknown key", section: "collections.edges")
                }
                do {
                    let template = try EdgeTemplate(json: e)
                    try Edge.validate(name: template.name)
                    edges.append(template)
                } catch {
                    throw self.error("collections.edges", "\(name): \(error.message)", section: "collections.edges")
                }
            }
            guard c.templates[UTF8Key(name)] == nil else {
                throw error(
                    "collections.name", "collection \"\(name)\" appears twice", section: "collections", occurrence: n)
            }
            c.templates[UTF8Key(name)] = edges
        }
    }

    private func indexes(_ value: JSONValue, into c: inout DaemonConfig) throws(ConfigError) {
        guard let items = value.arrayValue else { throw error("indexes", "must be an array of tables ([[indexes]])") }
        for (n, item) in items.enumerated() {
            for key in (item.objectValue ?? [:]).keys.sorted()
            where !["name", "version", "collections", "columns"].contains(key) {
                throw error("indexes.\(key)", "unknown key", section: "indexes", occurrence: n)
            }
            for col in item["columns"]?.arrayValue ?? [] {
                for key in (col.objectValue ?? [:]).keys.sorted() where !["name", "type", "path"].contains(key) {
                    throw error("indexes.columns.\(key)", "unknown key", section: "indexes", occurrence: n)
                }
            }
            let def: IndexDefinition
            do { def = try IndexDefinition(json: item) } catch {
                throw self.error("indexes", error.message, section: "indexes", occurrence: n)
            }
            guard !c.indexes.contains(where: { $0.name == def.name }) else {
                throw error("indexes.name", "index \"\(def.name)\" appears twice", section: "indexes", occurrence: n)
            }
            c.indexes.append(def)
        }
    }

    /// The TOML document as JSON: tables to objects, arrays to arrays, dates to strings.
    static func json(_ v: TOMLValueConvertible) -> JSONValue {
        if let t = v.table {
            var o = [String: JSONValue]()
            for k in t.keys { if let child = t[k] { o[k] = json(child) } }
            return .object(o)
        }
        if let a = v.array { return .array(a.map { json($0) }) }
        if let b = v.bool { return .bool(b) }
        if let i = v.int { return .int(Int64(i)) }
        if let d = v.double { return .double(d) }
        if let s = v.string { return .string(s) }
        return .string(v.debugDescription)
    }

    /// The line of `key` (its last dotted part) within `section` (the `occurrence`-th table of
    /// that name), else the section header's line; TOMLKit does not keep positions of values.
    func line(of key: String?, section: String?, occurrence: Int = 0) -> Int? {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let leaf = key.map { String($0.split(separator: ".").last ?? "") }
        var current = ""
        var seen = [String: Int]()
        var headerLine: Int?
        for (i, raw) in lines.enumerated() {
            let l = String(raw).trimmingCharacters(in: " \t\r")
            if l.hasPrefix("[") {
                current = l.trimmingCharacters(in: "[] \t")
                let n = seen[current, default: -1] + 1
                seen[current] = n
                if current == section && n == occurrence { headerLine = i + 1 }
                continue
            }
            let inSection = section == nil ? current.isEmpty : (current == section && seen[current] == occurrence)
            if inSection, let leaf, l.hasPrefix(leaf),
                String(l.dropFirst(leaf.count)).trimmingCharacters(in: " \t").hasPrefix("=")
            {
                return i + 1
            }
            if section == nil, let leaf, l.hasPrefix(leaf) { return i + 1 }
        }
        if let headerLine { return headerLine }
        if let leaf {
            for (i, raw) in lines.enumerated() where raw.contains("[\(leaf)]") || raw.contains("[[\(leaf)]]") {
                return i + 1
            }
        }
        return nil
    }
}
