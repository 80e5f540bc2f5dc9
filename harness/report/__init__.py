"""Renderers: the terminal's tables (`text`), progress bars (`progress`) and the HTML
report (`html`: one self-contained page per run, sweep or comparison), all reading the
same typed log records."""
