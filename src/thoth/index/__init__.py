"""The index layer: one IndexStore protocol (`base`), Qdrant Edge (`edge`) and Qdrant server
(`server`, `server_live`) adapters, immutable generations (`generations`), the record schema
(`records`), the one generation builder (`build`), the one reader (`reader`) and the live
collections (`live`).

Import the module you need: this package imports nothing itself, so that reading one module
(say `base`) does not load qdrant-client or the embedder.
"""
