"""The corpus: documents from files, folders, BEIR JSONL and URLs; questions; chunks.

load_documents(sources, ...)   Document records, ids stable across runs and machines
                               (Word, OpenDocument and PowerPoint files: word.py,
                               odf.py, slides.py; EPUB books: epub.py; email:
                               mail.py; CSV and Excel tables: table.py)
load_questions(path)           Question records (JSONL, JSON, CSV/TSV, an Excel workbook
                               (spreadsheet.py) or one per line)
read_text_file(path, field)    a UTF-8 text file, binary or undecodable ones refused
chunk_documents(docs, ...)     Chunk records with ids `<doc_id>#<start_char>`
fit_sources(questions, docs)   source spans kept only where the corpus holds them
headings(text)                 a document's section headings (markdown, rST, AsciiDoc)
corpus_language(texts)         the language most documents are written in (language.py)
"""

from harness.corpus.chunk import chunk_documents, splitter_spec
from harness.corpus.headings import Heading, headings
from harness.corpus.language import (
    ENGLISH,
    OTHER,
    corpus_language,
    language_counts,
    passage_language,
)
from harness.corpus.load import corpus_hash, load_beir_corpus, load_documents, read_text_file
from harness.corpus.questions import fit_sources, load_questions

__all__ = [
    "ENGLISH",
    "OTHER",
    "Heading",
    "chunk_documents",
    "corpus_hash",
    "corpus_language",
    "fit_sources",
    "headings",
    "language_counts",
    "load_beir_corpus",
    "load_documents",
    "load_questions",
    "passage_language",
    "read_text_file",
    "splitter_spec",
]
