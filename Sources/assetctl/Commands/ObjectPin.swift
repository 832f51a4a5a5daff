// `assetctl pin COLLECTION KEY` / `assetctl unpin COLLECTION KEY` → object.pin / object.unpin:
// a pinned object is never evicted or expired until unpinned.

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `pin`.
struct ObjectPinCommand: ObjectRefCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin", abstract: "Protect an object from eviction and expiry until unpinned.")
    static let method = "object.pin"

    @ParentCommand var root: AssetCtl

    @OptionGroup var object: ObjectArguments
}

/// `unpin`.
struct ObjectUnpinCommand: ObjectRefCommand {
    static let configuration = CommandConfiguration(
        commandName: "unpin", abstract: "Let policies evict or expire an object again.")
    static let method = "object.unpin"

    @ParentCommand var root: AssetCtl

    @OptionGroup var object: ObjectArguments
}
