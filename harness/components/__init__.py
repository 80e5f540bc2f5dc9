"""The component contract: rerankers, embedders, judge backends and endpoints.

A component is one module, named in a registry (`registry.py`: a name in an experiment
file -> the module's import path) and imported only when it is used. The module owns
everything about it (`contract.py` lists the functions each kind provides): its logged
`{name, args}` spec, its settings (`[<table>.settings.<name>]`, parsed and checked by the
module, errors naming the file and the field), how it is built, what it costs in a dry
run, and its LangChain export (or the note that there is no stock equivalent, which
`export-config` reports). The endpoint fields of every component (where a credential
goes) are listed in one place, `endpoints.py`, so nothing read from a results folder
keeps them.

This package sits below `config`: it imports no other part of harness at import time.
"""
