// `assetctl pin COLLECTION KEY` / `assetctl unpin COLLECTION KEY` → object.pin / object.unpin:
// a pinned object is never evicted or expired until unpinned.

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `pin`.
struct ObjectPinCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin", abstract: "Protect an object from eviction and expiry until unpinned.")

    @ParentCommand var root: AssetCtl

    @Argument(help: "The collection.") var collection: String
    @Argument(help: "The key.") var key: String

    func run() throws {
        root.emit(try root.call("object.pin", CLIParams.ref(collection, key)), Render.commit)
    }
}

/// `unpin`.
struct ObjectUnpinCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unpin", abstract: "Let policies evict or expire an object again.")

    @ParentCommand var root: AssetCtl

    @Argument(help: "The collection.") var collection: String
    @Argument(help: "The key.") var key: String

    func run() throws {
        root.emit(try root.call("object.unpin", CLIParams.ref(collection, key)), Render.commit)
    }
}
