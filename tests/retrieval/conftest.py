"""Fixtures for retrieval tests: a tiny cross-encoder built locally (none ships)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.retrieval.rerankers import tokenize
from tests.conftest import DATA

CORPUS_WORDS = ("what is the rate", "leave policy remote work", "expenses travel")


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory) -> Path:
    """A randomly initialised BERT cross-encoder with a tiny vocabulary, saved locally."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("cross-encoder")
    texts = [p.read_text() for p in (DATA / "corpus").glob("*.md")]
    words = sorted({w for t in [*texts, *CORPUS_WORDS] for w in tokenize(t)})
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )
    fast.save_pretrained(folder)
    import torch

    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        num_labels=1,
    )
    BertForSequenceClassification(cfg).save_pretrained(folder)
    return folder
