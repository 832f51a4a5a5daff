// `assetctl touch COLLECTION KEY` → object.touch: sets `accessed`, which drives LRU eviction.

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `touch`.
struct ObjectTouchCommand: ObjectRefCommand {
    static let configuration = CommandConfiguration(
        commandName: "touch", abstract: "Mark an object as accessed now.")
    static let method = "object.touch"

    @ParentCommand var root: AssetCtl

    @OptionGroup var object: ObjectArguments
}
