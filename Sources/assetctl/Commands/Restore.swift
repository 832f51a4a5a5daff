// `assetctl --db PATH --config CONFIG restore [--force]`: makes a backup copy put in place a
// live database again (assetctl(1), restore). A marked copy never sweeps, runs policies or
// deletes orphans, and assetd refuses to start on it: its queue may list files the live
// database holds again. The restore removes the mark, checks the copy is a backup of the
// config's store.path, moves the commit counter past the source's, and holds the copy's
// queued unlinks (and policy runs) and the orphans changed since the backup until an admin
// says otherwise. Only the config's store.path is restored, never beside a non-empty -wal.

import ArgumentParser
import AssetStore
import AssetctlText
import JSON

/// `restore`.
struct RestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Make the backup copy opened with --db a live database again (assetd stopped).")

    @ParentCommand var root: AssetCtl

    @Flag(help: "Restore a copy made otherwise (no backup mark), or one of another database than store.path.")
    var force = false

    func run() throws {
        guard root.db != nil else {
            throw CLIFailure(
                "restore works on a database file: assetctl --db PATH restore, with assetd stopped",
                status: ExitStatus.usage)
        }
        let r = try root.backend(restoring: true).restore(force: force)
        let result: JSONValue = .object([
            "restored": true, "mark": r.mark.map(JSONValue.string) ?? .null, "commit": .int(r.commit),
            "next_commit": .int(r.nextCommit), "taken": r.taken.map(JSONValue.double) ?? .null,
            "held": .int(Int64(r.held)),
        ])
        root.emit(result) { _ in
            "restored: no longer a backup copy (" + (r.mark ?? "a copy made otherwise, at commit \(r.commit)")
                + "); commits go on from \(r.nextCommit); \(r.held) queued unlinks of the copy held, and policy"
                + " runs paused, until `assetctl sweep --release-restore`, orphans changed since the backup kept until"
                + " `assetctl verify --delete-orphans --since-backup`\n"
        }
    }
}
