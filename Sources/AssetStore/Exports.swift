// The engine's API takes and returns JSON values (objects, templates, reports), so importing
// AssetStore brings the JSON module with it.

@_exported import JSON
