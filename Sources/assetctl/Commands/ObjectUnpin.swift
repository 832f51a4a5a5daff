// `assetctl unpin COLLECTION KEY` → object.unpin: policies may evict or expire it again.

import ArgumentParser
import AssetClient
import AssetStore

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
