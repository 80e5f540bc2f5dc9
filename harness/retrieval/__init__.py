"""Retrieval: embedders, the FAISS index, dense retrieval and rerankers.

Embedders and rerankers are built from their `{name, args}` spec by the registries in
`harness.components.registry`; this package imports nothing heavy until a component is used.
"""
