"""harness: reference-free retrieval tuning for RAG."""

__version__ = "0.1.0"
