// What the maintenance commands (enforce, evict, expire, verify, backup, vacuum) share: a one-line
// progress on stderr when it is a terminal (nothing otherwise), and the cron rule of assetctl(1),
// Maintenance and cron: while another maintenance run holds the daemon, or another process holds
// the --db database, say so on stderr and exit 0 instead of failing.

import AssetClient
import AssetctlText
import JSON

/// One maintenance call.
enum MaintenanceRun {
    /// The message cron mails (or logs) when a run is skipped.
    static let skipped = "another maintenance run is in progress; skipping"

    /// The result of `method`; with `showProgress` and stderr a terminal, asks for progress
    /// and draws it. Exits 0 with a message if another run holds the slot (unless
    /// `skipWhenBusy` is false: an index rebuild is not a cron job).
    static func call(
        _ root: AssetCtl, _ method: String, _ params: [String: JSONValue], showProgress: Bool = true,
        skipWhenBusy: Bool = true
    ) throws(CLIFailure) -> JSONValue {
        var p = params
        let drawer = showProgress && Console.stderrIsTerminal ? ProgressDrawer(label: root.progressLabel(method)) : nil
        if drawer != nil { p["progress"] = true }
        var report: (@Sendable (JSONValue) -> Void)?
        if let drawer { report = { drawer.draw($0) } }
        do throws(CLIFailure) {
            let result = try root.backend().call(method, .object(p), progress: report)
            drawer?.finish()
            return result
        } catch {
            drawer?.finish()
            if skipWhenBusy && error.maintenanceBusy {
                Console.error("\(skipped) (\(error.message))")
                terminate(ExitStatus.success)
            }
            throw error
        }
    }
}

extension MaintenanceRun {
    /// A policy run that stopped after committing some batches printed what they did; here
    /// it says why it stopped and exits 1.
    static func failIfIncomplete(_ result: JSONValue) {
        guard result["complete"] == false else { return }
        let message = result["error"]?["message"]?.stringValue ?? "unknown error"
        Console.error("the run stopped before it finished: \(message)")
        terminate(ExitStatus.failure)
    }
}

extension AssetCtl {
    /// The word a progress line starts with.
    func progressLabel(_ method: String) -> String {
        method.split(separator: ".").last.map(String.init) ?? method
    }
}

/// Draws `label: phase done/total` on stderr, rewriting one line, at most as often as the
/// reports come (the daemon sends at most 5 a second).
// @unchecked Sendable: called on the calling thread only (the client and LocalInvoker both
// report synchronously).
final class ProgressDrawer: @unchecked Sendable {
    private let label: String
    private var drawn = false

    init(label: String) {
        self.label = label
    }

    /// Draws one report `{phase, done, total}`.
    func draw(_ report: JSONValue) {
        var text = "\r\(label): \(report["phase"]?.stringValue ?? "")"
        if let done = report["done"]?.intValue {
            text += " \(done)"
            if let total = report["total"]?.intValue { text += "/\(total)" }
        }
        if let bytes = report["bytes"]?.intValue { text += " (\(bytes) bytes)" }
        Console.status(text + "\u{1B}[K")
        drawn = true
    }

    /// Clears the line.
    func finish() {
        if drawn { Console.status("\r\u{1B}[K") }
        drawn = false
    }
}

extension Render {
    /// A policy plan: OBJECT REASON BYTES WHY rows, one summary line, what was passed over
    /// and why, and each min_free out of reach with its cap.
    static func plan(_ r: JSONValue) -> String {
        let objects = r["objects"]?.arrayValue ?? []
        var out = Formatting.table(
            header: ["COLLECTION", "KEY", "REASON", "BYTES", "WHY"],
            rows: objects.map { o in
                ["collection", "key", "reason", "bytes"].map { Formatting.cell(o[$0] ?? .null) }
                    + [o["detail"]?.stringValue ?? "-"]
            })
        let files = r["files"]?.arrayValue?.count ?? 0
        let bytes = r["bytes"]?.intValue ?? 0
        let counts =
            "\(count(objects.count, "object")) and \(count(files, "file")), freeing \(count(Int(bytes), "byte"))"
        if r["dry_run"] == true {
            out += "would delete \(counts) (dry run)\n"
            if r["truncated"] == true {
                out += "the plan stops after one batch: a dry run by a user who is not an admin plans no more\n"
            }
        } else {
            out += "deleted \(counts)"
            if let c = r["commit"], !c.isNull { out += " (commit \(Formatting.cell(c)))" }
            out += "\n"
        }
        let skipped = (r["skipped"]?.objectValue ?? [:]).compactMap { k, v in v.intValue.map { (k, $0) } }
            .filter { $0.1 > 0 }.sorted { ($1.1, $0.0) < ($0.1, $1.0) }
        if !skipped.isEmpty {
            let names = [
                "too_young": "too young (policy.min_age)", "pinned": "pinned", "leased": "leased",
                "deny": "protected by a deny edge", "shared_file": "file shared with a protected object",
                "no_file": "holding no file",
            ]
            out += "skipped " + skipped.map { "\($0.1) \(names[$0.0] ?? $0.0)" }.joined(separator: ", ") + "\n"
        }
        if let n = r["oversized"]?.intValue, n > 0 {
            out +=
                "\(count(Int(n), "deletion")) reached more than a batch's work budget (10 x policy.batch)"
                + " and went whole\n"
        }
        for c in r["min_free_caps"]?.arrayValue ?? [] {
            let n = { (k: String) in Formatting.cell(c[k] ?? .null) }
            out +=
                "min_free \(n("min_free")) cannot be met on the file system of \(c["root"]?.stringValue ?? "?")"
                + " (at most \(n("reachable")) bytes free with every file assetd holds there evicted):"
                + " capped at \(n("cap")) bytes, the cache keeping at most \(n("share")) bytes there\n"
        }
        if r["configured"] == false { out += "no [policy] is configured: nothing is evicted or expired\n" }
        if r["held_by_restore"] == true {
            out +=
                "paused: the store was restored from a backup, and policy runs delete nothing until an admin"
                + " runs `assetctl sweep --release-restore` (assetctl(1), restore)\n"
        }
        return out
    }

    /// "1 object", "2 objects".
    static func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
}
