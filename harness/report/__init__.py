"""Renderers: the terminal's tables (`text`) and progress bars (`progress`); the HTML
report will sit beside them and read the same typed log records."""
