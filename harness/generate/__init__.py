"""Questions from the documents (`harness generate`): the reference-free promise starts here.

sampler    source passages spread over documents and positions, independent of chunking
prompts    one prompt per question type, the critique prompt, GBNF grammars; the query
           style's summary and query prompts, the rewrite, closed-book and corpus checks
llm        the model (the judge's client, budgets and a reply cache keyed by the seed)
critique   reading answers; the groundedness, usefulness and stand-alone filters, and
           definite references without an antecedent ("the menu")
dedup      near-duplicates by embedding cosine
exam       the judge exam: source passages must pass, unrelated ones must not
writer     the questions file, its report (GenerationReport), the exam (and its labels), the paraphrases
pipeline   generate_questions / estimate_generation: the whole command
"""

from harness.generate.exam import ExamItem, exam_rates, read_exam
from harness.generate.llm import Generator, GenStats, ReplyCache, open_generator
from harness.generate.pipeline import FILTERS, estimate_generation, generate_questions
from harness.generate.sampler import Passage, sample_passages
from harness.generate.writer import GenerationReport, output_paths

__all__ = [
    "FILTERS",
    "ExamItem",
    "GenStats",
    "GenerationReport",
    "Generator",
    "Passage",
    "ReplyCache",
    "estimate_generation",
    "exam_rates",
    "generate_questions",
    "open_generator",
    "output_paths",
    "read_exam",
    "sample_passages",
]
