// `assetctl touch COLLECTION KEY` → object.touch: sets `accessed`, which drives LRU eviction.

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `touch`.
struct ObjectTouchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "touch", abstract: "Mark an object as accessed now.")

    @ParentCommand var root: AssetCtl

    @Argument(help: "The collection.") var collection: String
    @Argument(help: "The key.") var key: String

    func run() throws {
        root.emit(try root.call("object.touch", CLIParams.ref(collection, key)), Render.commit)
    }
}
