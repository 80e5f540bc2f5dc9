"""Near-duplicate questions: embedding cosine above a threshold.

Generators repeat themselves (ragas #789, #809: 12-15 of 20 questions identical). A
question is a duplicate when the cosine between its embedding and that of a question
kept before it is above the threshold (0.9 by default); the first of a group is kept.
The embedder is the experiment's (the packaged MiniLM by default), behind the embedding
cache, so a rerun embeds nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

Embed = Callable[[Sequence[str]], list[list[float]]]
"""Unit vectors for texts (a CachedEmbedder's embed_queries)."""


def near_duplicates(texts: Sequence[str], embed: Embed, threshold: float) -> list[int | None]:
    """For each text in order, the index of an earlier kept text it duplicates (cosine
    above `threshold`), or None when it is kept. Texts equal after case and space folding
    are duplicates whatever their vectors; vectors are normalised here, so any embedder
    works."""
    if not texts:
        return []
    vecs = np.asarray(embed(list(texts)), dtype=np.float32)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    vecs = (vecs / np.where(norms > 0, norms, 1)).astype(np.float32)
    kept: list[int] = []
    folded: dict[str, int] = {}
    out: list[int | None] = []
    for i, text in enumerate(texts):
        key = " ".join(text.lower().split())
        twin: int | None = folded.get(key)
        if twin is None and kept:
            sims = vecs[kept] @ vecs[i]
            j = int(np.argmax(sims))
            if float(sims[j]) > threshold:
                twin = kept[j]
        out.append(twin)
        if twin is None:
            kept.append(i)
            folded[key] = i
    return out
