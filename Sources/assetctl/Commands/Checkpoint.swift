// `assetctl checkpoint` → checkpoint: writes the WAL back into the database file (admins).

import ArgumentParser
import AssetClient
import JSON

/// `checkpoint`.
struct CheckpointCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "checkpoint", abstract: "Write the write-ahead log back into the database file.")

    @ParentCommand var root: AssetCtl

    func run() throws {
        try root.show("checkpoint") { r in
            r["emptied"] == false
                ? "the write-ahead log was not emptied: another process is reading the database\n"
                : "checkpointed: the write-ahead log is back in the database file\n"
        }
    }
}
