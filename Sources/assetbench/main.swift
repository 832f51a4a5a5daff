import AssetStore
print("bench")
