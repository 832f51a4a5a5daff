// `assetctl sweep [--release-restore]` → sweep: runs due unlinks now and shows unlinked,
// failed, pending and held (the queued unlinks of a restored copy, run only once an admin
// passes --release-restore: assetctl(1), restore).

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `sweep`.
struct SweepCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "sweep", abstract: "Run due unlinks now.")

    @ParentCommand var root: AssetCtl

    @Flag(help: "End a restore's hold on the restored copy's queued unlinks, and run them (admin).")
    var releaseRestore = false

    func run() throws {
        try root.show("sweep", releaseRestore ? ["release_restore": true] : [:]) { r in
            let held = r["held"]?.intValue ?? 0
            return Formatting.listing(r)
                + (held > 0
                    ? "\(held) queued unlinks of a restored copy held: see `assetctl pending`, then"
                        + " `assetctl sweep --release-restore`\n" : "")
        }
    }
}
