"""Split documents into chunks with LangChain's RecursiveCharacterTextSplitter."""

from __future__ import annotations

from collections.abc import Sequence

from harness.types import Chunk, ComponentSpec, Document


def splitter_spec(chunk_size: int, chunk_overlap: int) -> ComponentSpec:
    """The splitter as logged and as part of the index cache key."""
    return ComponentSpec(
        name="recursive-character",
        args={"chunk_size": chunk_size, "chunk_overlap": chunk_overlap},
    )


def chunk_documents(
    docs: Sequence[Document], *, chunk_size: int, chunk_overlap: int
) -> list[Chunk]:
    """Chunks of every document, in document order.

    Sizes are in characters. A chunk id is `<doc_id>#<start_char>`: stable across runs for
    the same corpus and settings, unique within a run, and readable in `show`.
    """
    # Imported here: LangChain takes a third of a second, which commands that only read
    # text files from this package (validate reading qrels) should not pay.
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(
        chunk_size=chunk_size, chunk_overlap=chunk_overlap, add_start_index=True
    )
    chunks: list[Chunk] = []
    for doc in docs:
        for piece in splitter.create_documents([doc.text]):
            start = int(piece.metadata["start_index"])
            chunks.append(
                Chunk(
                    chunk_id=f"{doc.doc_id}#{start}",
                    doc_id=doc.doc_id,
                    text=piece.page_content,
                    start_char=start,
                )
            )
    return chunks
